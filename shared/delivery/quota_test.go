package delivery_test

import (
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store/storetest"
)

// TestQuota: 300 alerts and, separately, 300 dismissals per host per rolling
// 15 minutes; the window is strict, another host is unaffected
// (reference-behaviour §4.3).
func TestQuota(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			a, b := e.device(t, "hostA", "phone"), e.device(t, "hostB", "phone")
			for i := range contract.AlertQuota {
				e.mustSend(t, contract.StatusQueued, "hostA", alert("n", int64(i)), a)
			}
			before := e.rows(t)
			e.mustSend(t, contract.StatusRateLimited, "hostA", alert("n", 1000), a)
			e.mustRows(t, before) // nothing written

			// Dismissals have their own budget.
			for i := range contract.DismissQuota {
				e.mustSend(t, contract.StatusQueued, "hostA", dismissal("d", int64(i)), a)
			}
			e.mustSend(t, contract.StatusRateLimited, "hostA", dismissal("d", 1000), a)

			// Another host is unaffected.
			e.mustSend(t, contract.StatusQueued, "hostB", alert("n", 1000), b)

			// A duplicate is never rate limited.
			e.mustSend(t, contract.StatusQueued, "hostA", alert("n", 5), a)

			// One millisecond before the first events leave the window the
			// budget is still spent; exactly 15 minutes after, it is back.
			e.clock.Advance(contract.QuotaWindow - 1)
			e.mustSend(t, contract.StatusRateLimited, "hostA", alert("n", 1001), a)
			e.clock.Advance(1)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("n", 1001), a)
			e.mustSend(t, contract.StatusQueued, "hostA", dismissal("d", 1001), a)
		})
	}
}

// TestQuotaFanOutSpendsOnce: an event sent to two phones, or to one id
// repeated, spends one unit.
func TestQuotaFanOutSpendsOnce(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p1, p2 := e.device(t, "hostA", "phone1"), e.device(t, "hostA", "phone2")
			for i := range contract.AlertQuota - 1 {
				e.mustSend(t, contract.StatusQueued, "hostA", alert("n", int64(i)), p1)
			}
			e.mustSend(t, contract.StatusQueued, "hostA", alert("fan", 10_000), p1, p2)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("fan", 10_000), p2, p1) // a retry
			e.mustSend(t, contract.StatusRateLimited, "hostA", alert("next", 10_001), p1, p2)
			if got := e.rows(t)["events"]; got != contract.AlertQuota {
				t.Fatalf("events = %d, want %d", got, contract.AlertQuota)
			}
		})
	}
}
