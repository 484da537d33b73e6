package routes_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store/storetest"
)

// TestSignInFloodIsBounded: a flood of challenges from ever-new addresses
// (a forged X-Forwarded-For each) for a minute, one every 20 ms, leaves at
// most the instance bucket's worth of rows after a sweep: a full bucket plus
// what refills while a challenge lives with its grace. The refusals are 429
// rate_limited and counted. A host that holds a session lists its devices
// throughout, for authenticated routes never touch the bucket. Without the
// instance bucket the per-IP one admitted all 3000, and 2000 were still
// there after the sweep (issue 26 §2).
func TestSignInFloodIsBounded(t *testing.T) {
	const (
		step  = 20 * time.Millisecond
		flood = time.Minute
	)
	perMs := float64(contract.UnauthenticatedPerInstancePerMinute) / float64(contract.BucketWindow.Milliseconds())
	bound := int64(contract.UnauthenticatedPerInstancePerMinute) +
		int64(perMs*float64((contract.ChallengeTTL+contract.ChallengeGrace).Milliseconds()))
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			g := mustGateway(t, d)
			h := g.mustHost(t)
			if _, err := h.Register(ctx, android("phone")); err != nil {
				t.Fatal(err)
			}
			g.svc.Counters.Consume()
			body := `{"v":1,"hostPublicKeyB64":"` + mustKeypair(t).PublicKeyB64() + `"}`
			limited := int64(0)
			for i := range int(flood / step) {
				switch status, got := g.do(t, "POST", "/v1/host/challenge", body, g.freshIP()); {
				case status == http.StatusTooManyRequests && got == `{"error":"rate_limited"}`:
					limited++
				case status != http.StatusOK:
					t.Fatalf("challenge %d = %d %s, want 200 or 429 rate_limited", i, status, got)
				}
				if i%100 == 0 {
					if list, err := h.Devices(ctx); err != nil || len(list) != 1 {
						t.Fatalf("during the flood, Devices = %v, %v; want the phone", list, err)
					}
				}
				g.clock.Advance(step)
			}
			if _, err := g.svc.Sweeper.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if n := g.rowCounts(t)["push_challenges"]; n > bound {
				t.Errorf("%d challenges after the flood and a sweep, want at most %d", n, bound)
			}
			if n := g.svc.Counters.Consume()[obs.InstanceRateLimited]; n != limited || n == 0 {
				t.Errorf("instance_rate_limited = %d, want the %d refusals (some)", n, limited)
			}
		})
	}
}

// TestSessionFloodIsBounded: the session route has its own instance bucket:
// from ever-new addresses at one instant, a bucket's worth of proofs are
// looked at and the rest are 429 rate_limited, and the challenge route is
// still open.
func TestSessionFloodIsBounded(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			body := `{"v":1,"challengeId":"none","proofB64":"` + zeroKey + `"}`
			limited := 0
			for range contract.UnauthenticatedPerInstancePerMinute + 50 {
				if status, _ := g.do(t, "POST", "/v1/host/session", body, g.freshIP()); status == http.StatusTooManyRequests {
					limited++
				}
			}
			if limited != 50 {
				t.Errorf("%d sessions refused 429, want the 50 past the bucket", limited)
			}
			g.challenge(t, mustKeypair(t))
		})
	}
}
