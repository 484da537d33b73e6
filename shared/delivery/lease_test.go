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

// TestHandOn: a batch that fell due while another batch of its registration
// was in flight, and whose claim was held back, is neither scheduled again
// nor woken by a task: the lease holder, once its batch ends (sent, failed
// for good, dead, or back for a retry), claims it and delivers it in the
// same call. A due batch no claim asked for is left to its own task.
func TestHandOn(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, tt := range providerOutcomes {
				t.Run(tt.name, func(t *testing.T) {
					e := mustDeliverEnv(t, d)
					reg := e.device(t, "hostA", "phone")
					first := e.queue(t, reg, alert("a", 1))
					e.clock.Advance(contract.DefaultCoalesce)
					var held string
					var sends []string
					e.prov.step = func(_ context.Context, _ push.Target, m push.Message) push.Outcome {
						sends = append(sends, string(m.Kind))
						if held != "" {
							return push.Outcome{Kind: push.Sent}
						}
						// While the alert is in flight, a dismissal of
						// another notification falls due; its claim
						// finds the registration busy.
						held = e.queue(t, reg, dismissal("other", 2))
						e.deliver(t, held)
						if b := e.batch(t, held); b.State != store.BatchPending || b.Attempts != 0 {
							t.Fatalf("held-back batch = %+v, want pending, never attempted", b)
						}
						if got := e.sched.take(); len(got) != 0 {
							t.Fatalf("held back, it scheduled %v, want nothing (the holder hands on)", got)
						}
						return tt.out
					}
					e.deliver(t, first)
					want, wantSends := store.BatchSent, []string{"alert", "dismiss"}
					if tt.out.Kind == push.Dead {
						// Its registration is gone: no provider call.
						want, wantSends = store.BatchDead, []string{"alert"}
					}
					if b := e.batch(t, held); b.State != want {
						t.Fatalf("handed-on batch = %s, want %s", b.State, want)
					}
					if diff := cmp.Diff(wantSends, sends); diff != "" {
						t.Fatalf("provider calls (-want +got):\n%s", diff)
					}
					var wantCalls []call
					if tt.out.Kind == push.Retry {
						wantCalls = []call{{BatchID: first, At: e.batch(t, first).DueAt}} // its own retry
					}
					if diff := cmp.Diff(wantCalls, e.sched.take()); diff != "" {
						t.Fatalf("scheduled (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestHandOnKeepsWhatWaitsMarked: in a burst to one phone, the batches
// held back behind the lease are marked scheduled by the end of each
// delivery the hand-on reached (store.MarkHeldBack), so that the sweep,
// which takes a due batch unmarked for lostGrace for lost, leaves them to
// the hand-on while the burst goes out slowly. (The first end only reads
// them on PostgreSQL, store.ReadHeldBack: most ends find none.) Each
// provider call here takes 20 s of the clock; the last batch waits 60 s.
func TestHandOnKeepsWhatWaitsMarked(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustDeliverEnv(t, d)
			reg := e.device(t, "hostA", "phone")
			first := e.queue(t, reg, alert("a", 1))
			e.clock.Advance(contract.DefaultCoalesce)
			var held []string
			var marks []int64 // the last batch's mark as each call begins
			e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
				if held == nil {
					for i := range 3 {
						// A millisecond apart: due in this order.
						e.clock.Advance(time.Millisecond)
						id := e.queue(t, reg, dismissal(fmt.Sprintf("other-%d", i), int64(2+i)))
						e.deliver(t, id) // held back
						held = append(held, id)
					}
				}
				marks = append(marks, e.batch(t, held[2]).ScheduledAt)
				e.clock.Advance(20 * time.Second)
				return push.Outcome{Kind: push.Sent}
			}
			start := e.now()
			e.deliver(t, first)
			for _, id := range held {
				if b := e.batch(t, id); b.State != store.BatchSent {
					t.Fatalf("held-back batch %s is %s, want sent by the hand-on", id, b.State)
				}
			}
			// The third call (held[1]) begins after held[0]'s end, made
			// 40 s after the batches were queued: that end marked held[2].
			queued := start + 3
			if want := queued + 40_000; len(marks) != 4 || marks[2] != want {
				t.Errorf("the last batch's marks at each call = %v, want the third %d (held[0]'s end; queued at %d)",
					marks, want, queued)
			}
		})
	}
}

// TestHandOnLeavesTheUnasked: a batch that is due but whose claim never
// came while the lease was held (its task is on its way) is not taken by the
// hand-on: its own task claims it.
func TestHandOnLeavesTheUnasked(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustDeliverEnv(t, d)
			reg := e.device(t, "hostA", "phone")
			first := e.queue(t, reg, alert("a", 1))
			e.clock.Advance(contract.DefaultCoalesce)
			var other string
			sends := 0
			e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
				sends++
				if other == "" {
					other = e.queue(t, reg, dismissal("other", 2))
				}
				return push.Outcome{Kind: push.Sent}
			}
			e.deliver(t, first)
			if b := e.batch(t, other); sends != 1 || b.State != store.BatchPending {
				t.Fatalf("after the first delivery: %d sends, other %s; want 1, pending", sends, b.State)
			}
			e.deliver(t, other)
			if b := e.batch(t, other); sends != 2 || b.State != store.BatchSent {
				t.Fatalf("after its own task: %d sends, other %s; want 2, sent", sends, b.State)
			}
		})
	}
}

// TestHandOnPastTheBudget: a delivery whose budget (its request's ctx)
// runs out during its provider call is cut short and recorded as a retry;
// of the two batches its lease held back, the first goes to one task, keyed
// by the lease, and the second to none: the first's delivery hands on to it.
func TestHandOnPastTheBudget(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustDeliverEnv(t, d)
			reg := e.device(t, "hostA", "phone")
			first := e.queue(t, reg, alert("a", 1))
			e.clock.Advance(contract.DefaultCoalesce)
			var held []string
			var token string
			sends := 0
			e.prov.step = func(ctx context.Context, _ push.Target, _ push.Message) push.Outcome {
				sends++
				if sends > 1 {
					return push.Outcome{Kind: push.Sent}
				}
				token = e.batch(t, first).LeaseToken
				held = append(held, e.queue(t, reg, dismissal("other", 2)), e.queue(t, reg, alert("b", 3)))
				e.clock.Advance(contract.DefaultCoalesce)
				for _, id := range held {
					e.deliver(t, id)
				}
				e.sched.take()
				<-ctx.Done() // a provider that hangs past the budget
				return push.Outcome{Kind: push.Retry, Reason: "Timeout"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if err := e.dl.Deliver(ctx, first); err != nil {
				t.Fatal(err)
			}
			if b := e.batch(t, first); b.State != store.BatchPending || b.Attempts != 1 || b.LeaseToken != "" {
				t.Fatalf("cut-short batch = %+v, want pending for a retry", b)
			}
			want := []call{{BatchID: held[0], At: e.now(), Key: token}, {BatchID: first, At: e.batch(t, first).DueAt}}
			if diff := cmp.Diff(want, e.sched.take()); diff != "" {
				t.Fatalf("scheduled (-want +got):\n%s", diff)
			}
			e.deliver(t, held[0])
			for _, id := range held {
				if b := e.batch(t, id); b.State != store.BatchSent {
					t.Errorf("held-back batch %s is %s, want sent", id, b.State)
				}
			}
			if sends != 3 {
				t.Errorf("%d provider calls, want 3", sends)
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
