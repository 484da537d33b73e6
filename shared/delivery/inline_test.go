package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestInline holds what delivery.Inline delivers in the call (a batch due
// now, at its own due time) and what it hands to the next scheduler: a batch
// due later, a wake-up (keyed), a retry the delivery schedules, and a batch
// whose delivery failed on the database, which a task then carries as it
// would have without Inline.
func TestInline(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			e := mustDeliverEnv(t, d)
			next := &recorder{}
			in, err := delivery.NewInline(e.dl, next, e.clock)
			if err != nil {
				t.Fatal(err)
			}
			sends := 0
			outcome := push.Outcome{Kind: push.Sent}
			e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
				sends++
				return outcome
			}
			state := func(id string) store.BatchState {
				t.Helper()
				b, err := e.store.Batch(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return b.State
			}
			// Every batch is queued, and then the clock moves past its
			// coalescing window: each is due now.
			a := e.queue(t, e.device(t, "hostA", "a"), alert("n1", 1))
			b := e.queue(t, e.device(t, "hostA", "b"), alert("n2", 2))
			c := e.queue(t, e.device(t, "hostA", "c"), alert("n3", 3))
			dd := e.queue(t, e.device(t, "hostA", "d"), alert("n4", 4))
			now := e.clock.Advance(3 * time.Second)

			// Due now: delivered in the call, nothing scheduled.
			if err := in.Schedule(ctx, a, "reg", now, ""); err != nil {
				t.Fatal(err)
			}
			if sends != 1 || state(a) != store.BatchSent || len(next.take()) != 0 {
				t.Fatalf("due now: %d sends, state %s; want 1 send, sent, nothing scheduled", sends, state(a))
			}

			// Due later, or a wake-up keyed by the lease that held it back:
			// the next scheduler's.
			later := now.Add(3 * time.Second)
			if err := in.Schedule(ctx, b, "reg", later, ""); err != nil {
				t.Fatal(err)
			}
			if err := in.Schedule(ctx, b, "reg", now, "lease-1"); err != nil {
				t.Fatal(err)
			}
			want := []call{{b, now.UnixMilli(), "lease-1"}, {b, later.UnixMilli(), ""}}
			if diff := cmp.Diff(want, next.take()); diff != "" || sends != 1 {
				t.Fatalf("later and keyed: %d sends, scheduled (-want +got):\n%s", sends, diff)
			}

			// A retryable answer: the delivery schedules the retry itself,
			// through its own scheduler, once.
			outcome = push.Outcome{Kind: push.Retry, Reason: "ServiceUnavailable"}
			if err := in.Schedule(ctx, c, "reg", now, ""); err != nil {
				t.Fatal(err)
			}
			if got := e.sched.take(); len(got) != 1 || got[0].BatchID != c || got[0].At <= now.UnixMilli() {
				t.Fatalf("retry scheduled %+v, want one later call for %s", got, c)
			}
			if len(next.take()) != 0 {
				t.Fatal("a retry went to Inline's next scheduler too")
			}

			// The database fails: the batch goes to the next scheduler at
			// its due time, as it would have without Inline.
			outcome = push.Outcome{Kind: push.Sent}
			e.store.Close()
			if err := in.Schedule(ctx, dd, "reg", now, ""); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]call{{dd, now.UnixMilli(), ""}}, next.take()); diff != "" || sends != 2 {
				t.Fatalf("failed delivery: %d sends, scheduled (-want +got):\n%s", sends, diff)
			}
		})
	}
}
