package delivery

import (
	"fmt"
	"testing"

	"onorca.dev/push/shared/store"
)

// TestQuotaModes: a host's mode is what was set last, counting is
// remembered by forgetting, and the hosts remembered stay at most
// maxQuotaModes however many pass.
func TestQuotaModes(t *testing.T) {
	var q quotaModes
	if got := q.get("a"); got != store.QuotaCount {
		t.Fatalf("an unknown host: %v, want QuotaCount", got)
	}
	q.set("a", store.QuotaRing)
	q.set("b", store.QuotaRebuild)
	if q.get("a") != store.QuotaRing || q.get("b") != store.QuotaRebuild {
		t.Fatalf("modes %v %v, want ring and rebuild", q.get("a"), q.get("b"))
	}
	q.set("a", store.QuotaCount)
	if _, ok := q.m["a"]; ok || q.get("a") != store.QuotaCount {
		t.Fatal("a host back to counting is still remembered")
	}
	for i := range 3 * maxQuotaModes {
		q.set(fmt.Sprint("host", i), store.QuotaRing)
		if len(q.m) > maxQuotaModes {
			t.Fatalf("%d hosts remembered, want at most %d", len(q.m), maxQuotaModes)
		}
	}
}
