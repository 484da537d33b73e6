package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// stepProvider answers each Send by calling the test's step, so a test can
// act while a delivery is in flight: between the claim and the outcome.
type stepProvider struct {
	step func(ctx context.Context, t push.Target, m push.Message) push.Outcome
}

func (p *stepProvider) Send(ctx context.Context, t push.Target, m push.Message) push.Outcome {
	return p.step(ctx, t, m)
}

// deliverEnv is an Admission and a Deliverer over one database and clock,
// with a provider the test steers.
type deliverEnv struct {
	*env
	prov *stepProvider
	dl   *delivery.Deliverer
}

func mustDeliverEnv(t *testing.T, d storetest.Dialect) *deliverEnv {
	t.Helper()
	return mustDeliverEnvOn(t, mustEnv(t, d))
}

// mustDeliverEnvOn is mustDeliverEnv over e's database and clock.
func mustDeliverEnvOn(t *testing.T, e *env) *deliverEnv {
	t.Helper()
	prov := &stepProvider{step: func(context.Context, push.Target, push.Message) push.Outcome {
		return push.Outcome{Kind: push.Sent}
	}}
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(t), Store: e.store, Clock: e.clock,
		Counters:  obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil))),
		Scheduler: e.sched, APNS: prov, FCM: prov})
	if err != nil {
		t.Fatal(err)
	}
	return &deliverEnv{env: e, prov: prov, dl: dl}
}

// deliver runs one delivery of batchID and fails the test on an error.
func (e *deliverEnv) deliver(t *testing.T, batchID string) {
	t.Helper()
	if err := e.dl.Deliver(context.Background(), batchID); err != nil {
		t.Fatalf("Deliver(%s): %v", batchID, err)
	}
}

// queue sends n to reg and returns the batch it was put in (the last
// handed to the scheduler).
func (e *deliverEnv) queue(t *testing.T, reg string, n contract.Notification) string {
	t.Helper()
	e.mustSend(t, contract.StatusQueued, "hostA", n, reg)
	calls := e.sched.take()
	if len(calls) == 0 {
		t.Fatalf("send of %s handed nothing to the scheduler", n.NotificationID)
	}
	return calls[len(calls)-1].BatchID
}

// providerOutcomes is one answer of each kind a provider gives.
var providerOutcomes = []struct {
	name string
	out  push.Outcome
}{
	{"sent", push.Outcome{Kind: push.Sent}},
	{"retry", push.Outcome{Kind: push.Retry, Reason: "ServiceUnavailable"}},
	{"terminal", push.Outcome{Kind: push.Terminal, Reason: "BadTopic"}},
	{"dead", push.Outcome{Kind: push.Dead, Reason: "Unregistered"}},
}

// TestStaleHolderRecordsNothing: a delivery whose lease ran out while its
// provider call was slow, and was taken over by another delivery, records
// nothing when its call returns, whatever the outcome: not sent, not a
// retry, not a dead token, not an error. The batch stays with the new
// holder, which records its own outcome.
func TestStaleHolderRecordsNothing(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, tt := range providerOutcomes {
				t.Run(tt.name, func(t *testing.T) {
					e := mustDeliverEnv(t, d)
					reg := e.device(t, "hostA", "phone")
					id := e.queue(t, reg, alert("a", 1))
					e.clock.Advance(contract.DefaultCoalesce)
					var taken store.Batch
					e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
						// The first call outlives its lease: a task
						// retry claims the batch again, and that
						// delivery fails and is retried before this
						// call returns.
						e.clock.Advance(contract.LeaseDuration + 1)
						e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
							return push.Outcome{Kind: push.Retry, Reason: "second"}
						}
						e.deliver(t, id)
						taken = e.batch(t, id)
						if taken.State != store.BatchPending || taken.Attempts != 2 || taken.DueAt <= e.now() {
							t.Fatalf("after the second delivery the batch is %+v, want pending for a retry", taken)
						}
						e.sched.take()
						return tt.out
					}
					e.deliver(t, id)
					if diff := cmp.Diff(taken, e.batch(t, id)); diff != "" {
						t.Errorf("the stale holder changed the batch (-before +after):\n%s", diff)
					}
					if got := e.sched.take(); len(got) != 0 {
						t.Errorf("the stale holder scheduled %v, want nothing", got)
					}
				})
			}
		})
	}
}

// TestHeldBackSurvivesACrash: the lease holder dies mid-delivery (its claim
// committed, no outcome ever recorded) while another batch of the
// registration is held back, for which nothing was scheduled. Once the lease
// and the sweep's grace have passed, the sweep's rescue finds both lost, and
// each is delivered once: the rescued holder's delivery hands on to the
// held-back batch, whose own rescue task then finds nothing to do.
func TestHeldBackSurvivesACrash(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			e := mustDeliverEnv(t, d)
			reg := e.device(t, "hostA", "phone")
			first := e.queue(t, reg, alert("a", 1))
			now := e.clock.Advance(contract.DefaultCoalesce).UnixMilli()
			// The claim of a delivery whose process then dies.
			if c, err := e.store.ClaimBatch(ctx, first, "dead", now, now+contract.LeaseDuration.Milliseconds(), push.ReasonExpired); err != nil || !c.Leased {
				t.Fatalf("ClaimBatch = %+v, %v; want leased", c, err)
			}
			held := e.queue(t, reg, dismissal("other", 2))
			e.deliver(t, held)
			if got := e.sched.take(); len(got) != 0 {
				t.Fatalf("held back, it scheduled %v, want nothing", got)
			}
			var sends []string
			e.prov.step = func(_ context.Context, _ push.Target, m push.Message) push.Outcome {
				sends = append(sends, string(m.Kind))
				return push.Outcome{Kind: push.Sent}
			}
			sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: e.store, Clock: e.clock, Counters: e.counters, Scheduler: e.sched})
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(contract.LeaseDuration + time.Minute)
			if _, err := sw.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			var rescued []string
			for _, c := range e.sched.take() {
				rescued = append(rescued, c.BatchID)
			}
			if slices.Sort(rescued); !slices.Equal(rescued, slices.Sorted(slices.Values([]string{first, held}))) {
				t.Fatalf("the sweep rescued %v, want both batches", rescued)
			}
			e.deliver(t, first)
			e.deliver(t, held)
			for _, id := range []string{first, held} {
				if b := e.batch(t, id); b.State != store.BatchSent {
					t.Errorf("batch %s is %s, want sent", id, b.State)
				}
			}
			if diff := cmp.Diff([]string{"alert", "dismiss"}, sends); diff != "" {
				t.Errorf("provider calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaimAtTheDeadline: a batch is delivered up to the millisecond before
// its deadline, and at its deadline it expires with no provider call
// (reference-behaviour §6: eligible while expires_at > now).
func TestClaimAtTheDeadline(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, late := range []int64{0, 1} {
				e := mustDeliverEnv(t, d)
				reg := e.device(t, "hostA", "phone")
				n := alert("a", 1)
				n.ExpiresAt = e.now() + 1000
				id := e.queue(t, reg, n)
				e.clock.Set(time.UnixMilli(n.ExpiresAt - 1 + late))
				calls := 0
				e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
					calls++
					return push.Outcome{Kind: push.Sent}
				}
				e.deliver(t, id)
				want, wantCalls := store.BatchSent, 1
				if late == 1 {
					want, wantCalls = store.BatchExpired, 0
				}
				if b := e.batch(t, id); b.State != want || calls != wantCalls {
					t.Errorf("claim at deadline%+d ms: batch %s after %d provider calls, want %s after %d",
						late-1, b.State, calls, want, wantCalls)
				}
			}
		})
	}
}

// TestOutcomeRecordedAfterCancel: a request that ends while its provider call
// is in flight (a dispatch deadline, a client gone, a shutdown) still records
// the outcome the provider gave, so its lease is not left held; and Halt cuts
// a provider call short into a retry that is recorded the same way.
func TestOutcomeRecordedAfterCancel(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustDeliverEnv(t, d)
			reg := e.device(t, "hostA", "phone")
			id := e.queue(t, reg, alert("a", 1))
			e.clock.Advance(contract.DefaultCoalesce)
			ctx, cancel := context.WithCancel(context.Background())
			e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
				cancel() // the request is gone; the provider accepted it
				return push.Outcome{Kind: push.Sent}
			}
			if err := e.dl.Deliver(ctx, id); err != nil {
				t.Fatalf("Deliver = %v", err)
			}
			if b := e.batch(t, id); b.State != store.BatchSent {
				t.Fatalf("batch = %s, want sent", b.State)
			}

			id = e.queue(t, reg, alert("b", 2))
			e.clock.Advance(contract.DefaultCoalesce)
			e.prov.step = func(ctx context.Context, _ push.Target, _ push.Message) push.Outcome {
				e.dl.Halt()
				select {
				case <-ctx.Done(): // a provider that would not answer
					return push.Outcome{Kind: push.Retry, Reason: "transport"}
				case <-time.After(contract.ProviderTimeout): // Halt did not reach the call
					return push.Outcome{Kind: push.Sent}
				}
			}
			e.deliver(t, id)
			if b := e.batch(t, id); b.State != store.BatchPending || b.LeaseToken != "" || b.DueAt <= e.now() {
				t.Fatalf("halted batch = %+v, want pending for a retry with no lease", b)
			}
		})
	}
}

// TestClaimDropsFenced: a dismissal that arrives while its alert's batch is
// in flight cannot take the alert out (admission leaves leased batches
// alone); when that delivery is lost and the batch is claimed again, the
// claim drops the dismissed alert and sends the rest, or ends the batch as
// dismissed when nothing is left.
func TestClaimDropsFenced(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, both := range []bool{false, true} {
				e := mustDeliverEnv(t, d)
				reg := e.device(t, "hostA", "phone")
				id := e.queue(t, reg, alert("a", 1))
				if both {
					e.mustSend(t, contract.StatusQueued, "hostA", alert("b", 2), reg) // joins
				}
				e.clock.Advance(contract.DefaultCoalesce)
				var resent []string
				e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
					// In flight: the dismissal of a arrives, then the
					// delivery is lost (its lease runs out) and the
					// batch is claimed again.
					e.mustSend(t, contract.StatusQueued, "hostA", dismissal("a", 1), reg)
					e.sched.take()
					e.clock.Advance(contract.LeaseDuration + 1)
					e.prov.step = func(_ context.Context, _ push.Target, m push.Message) push.Outcome {
						resent = append(resent, fmt.Sprintf("%s×%d", m.NotificationID, m.CoalescedCount))
						return push.Outcome{Kind: push.Sent}
					}
					e.deliver(t, id)
					return push.Outcome{Kind: push.Sent}
				}
				e.deliver(t, id)
				b := e.batch(t, id)
				switch {
				case both && (b.State != store.BatchSent || !slices.Equal(resent, []string{"b×1"})):
					t.Errorf("batch of a and b: %s, resent %q; want sent with b only", b.State, resent)
				case !both && (b.State != store.BatchDismissed || len(resent) != 0):
					t.Errorf("batch of a: %s, resent %q; want dismissed, nothing sent", b.State, resent)
				}
			}
		})
	}
}
