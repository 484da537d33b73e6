package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestSendAnswersWithinItsBudget holds issue 29 §2 with inline delivery:
// with APNs hanging for every token, a send to 20 iPhones is answered
// queued for all 20 within one short budget for the whole request, not in
// waves of the provider's timeout; at the answer no delivery is in flight
// (every batch unleased, each with one task: the calls cut short as
// retries, the deliveries never started due now), and once APNs answers
// again every phone gets the alert once. The time bound is a generous one;
// the rest is counted.
func TestSendAnswersWithinItsBudget(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			e := startEmu(t, d, "ORCA_PUSH_DELIVER_INLINE=1", "ORCA_PUSH_COALESCE_MS=0")
			var regs, tokens []string
			for i := range contract.MaxRegistrationIDs {
				token := strings.Repeat(fmt.Sprintf("%02x", i), 32)
				id, err := e.host.Register(ctx, hostclient.RegisterParams{DeviceID: fmt.Sprint("phone", i),
					Platform: contract.PlatformIOS, Token: token, APNSEnvironment: contract.APNSSandbox})
				if err != nil {
					t.Fatal(err)
				}
				regs, tokens = append(regs, id), append(tokens, token)
			}
			e.fault(`{"provider":"apns","token":"*","hang":true,"times":1000}`)
			began := time.Now()
			res, err := e.host.Send(ctx, regs, alert("n1", 1))
			took := time.Since(began)
			t.Logf("answered in %v", took)
			if err != nil || len(res) != len(regs) {
				t.Fatalf("Send = %v, %v", res, err)
			}
			for _, r := range res {
				if r.Status != contract.StatusQueued {
					t.Fatalf("result %+v, want queued", r)
				}
			}
			if took > 2*time.Second {
				t.Errorf("answered after %v, want within 2 s (the budget is %v)", took, time.Second)
			}

			// Nothing goes on after the answer: no batch is leased, and
			// each has exactly one task.
			tasks := e.em.local.tasks.Tasks()
			seen := map[string]bool{}
			attempted := 0
			for _, tk := range tasks {
				var body struct{ BatchID string }
				if err := json.Unmarshal([]byte(tk.Body), &body); err != nil {
					t.Fatal(err)
				}
				if seen[body.BatchID] {
					t.Errorf("batch %s has two tasks", body.BatchID)
				}
				seen[body.BatchID] = true
				b, err := e.em.svc.Store.Batch(ctx, body.BatchID)
				if err != nil {
					t.Fatal(err)
				}
				if b.State != store.BatchPending || b.LeaseToken != "" || b.Attempts > 1 {
					t.Errorf("batch after the answer: %s, lease %q, %d attempts; want pending, unleased, at most one attempt",
						b.State, b.LeaseToken, b.Attempts)
				}
				attempted += b.Attempts
			}
			hung := len(e.inbox())

			if len(seen) != len(regs) || attempted != hung || hung == 0 || hung > len(regs)/2 {
				t.Errorf("%d batches with a task, %d attempted, %d provider calls; want %d, as many attempted as called, and most never started",
					len(seen), attempted, hung, len(regs))
			}

			// APNs answers again: every phone gets the alert once.
			e.call("DELETE", "/_emulator/faults", "", nil)
			e.advance(contract.MaxBackoff.Milliseconds())
			got := map[string]int{}
			for _, dl := range e.inbox() {
				if dl.Status == 200 {
					got[strings.TrimPrefix(dl.Path, "/3/device/")]++
				}
			}
			for _, tok := range tokens {
				if got[tok] != 1 {
					t.Errorf("phone %s… got the alert %d times, want once", tok[:4], got[tok])
				}
			}
		})
	}
}
