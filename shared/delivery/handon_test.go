package delivery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// mustFirstAlert returns a deliverEnv on d with one phone of hostA and one
// alert queued to it and due: the batch whose delivery the hand-on tests
// hold in flight.
func mustFirstAlert(t *testing.T, d storetest.Dialect) (e *deliverEnv, reg, first string) {
	t.Helper()
	e = mustDeliverEnv(t, d)
	reg = e.device(t, "hostA", "phone")
	first = e.queue(t, reg, alert("a", 1))
	e.clock.Advance(contract.DefaultCoalesce)
	return e, reg, first
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
					e, reg, first := mustFirstAlert(t, d)
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
			e, reg, first := mustFirstAlert(t, d)
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
			e, reg, first := mustFirstAlert(t, d)
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
			e, reg, first := mustFirstAlert(t, d)
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
