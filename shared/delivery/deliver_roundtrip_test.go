package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
)

// sentProvider accepts every message; it stands for a provider in a round
// trip count, where only the SQL is measured.
type sentProvider struct{}

func (sentProvider) Send(context.Context, push.Target, push.Message) push.Outcome {
	return push.Outcome{Kind: push.Sent}
}

// TestDeliverRoundTrips counts the SQL round trips of one delivery (claim
// with the device and fences, record) through a proxy in front of
// PostgreSQL.
func TestDeliverRoundTrips(t *testing.T) {
	s, rt := mustCountingStore(t, 0)
	clk := clock.NewManual(start)
	e := mustEnvOn(t, s, clk)
	counters := obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(t), Store: s, Clock: clk, Counters: counters,
		Scheduler: delivery.NopScheduler{}, APNS: sentProvider{}, FCM: sentProvider{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var last int64
	for i := range 3 { // the first run also prepares each statement
		reg := e.device(t, "host", "phone"+strings.Repeat("x", i))
		e.mustSend(t, contract.StatusQueued, "host", alert("n", int64(i)), reg)
		calls := e.sched.take()
		clk.Advance(contract.DefaultCoalesce)
		before := rt.Load()
		if err := dl.Deliver(ctx, calls[0].BatchID); err != nil {
			t.Fatal(err)
		}
		last = rt.Load() - before
		if sent := counters.Consume()[obs.DeliverySent]; sent != 1 {
			t.Fatalf("sent %d, want 1", sent)
		}
	}
	t.Logf("round trips per delivery: %d", last)
	if last > maxDeliverRoundTrips {
		t.Fatalf("%d round trips per delivery, want at most %d", last, maxDeliverRoundTrips)
	}
}

// maxDeliverRoundTrips is what a delivery takes: the claim (BEGIN, the host
// lock, the one claim statement and COMMIT in one round trip), then the
// outcome. Two durable writes need two round trips: this is the floor.
const maxDeliverRoundTrips = 2

// countingProvider accepts every message and counts them.
type countingProvider struct{ n atomic.Int64 }

func (p *countingProvider) Send(context.Context, push.Target, push.Message) push.Outcome {
	p.n.Add(1)
	return push.Outcome{Kind: push.Sent}
}

// TestConnectionLostMidDelivery drops the database connection at each round
// trip of a delivery, once before the server sees it and once after, and
// checks that the batch is still delivered: at once, or when the lease a
// committed claim left behind runs out; and that the provider got it once,
// or twice only when the outcome was lost after the provider accepted it
// (the same collapse id, which the phone shows once).
func TestConnectionLostMidDelivery(t *testing.T) {
	ctx := context.Background()
	s, rt := mustCountingStore(t, 1) // one connection: the round trips counted are the delivery's
	clk := clock.NewManual(start)
	e := mustEnvOn(t, s, clk)
	prov := &countingProvider{}
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(t), Store: s, Clock: clk,
		Counters:  obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil))),
		Scheduler: delivery.NopScheduler{}, APNS: prov, FCM: prov})
	if err != nil {
		t.Fatal(err)
	}
	reg := e.device(t, "host", "phone")
	seq := int64(0)
	queue := func() string {
		seq++
		e.mustSend(t, contract.StatusQueued, "host", alert(fmt.Sprint("n", seq), seq), reg)
		calls := e.sched.take()
		clk.Advance(contract.DefaultCoalesce)
		return calls[len(calls)-1].BatchID
	}
	for rtrip := int64(1); rtrip <= maxDeliverRoundTrips; rtrip++ {
		for _, delivered := range []bool{false, true} {
			name := fmt.Sprintf("round trip %d, delivered %v", rtrip, delivered)
			// A new connection prepares its statements on first use: warm it.
			for range 2 {
				if err := dl.Deliver(ctx, queue()); err != nil {
					t.Fatal(err)
				}
			}
			id := queue()
			sends := prov.n.Load()
			rt.Cut(rtrip, delivered)
			if err := dl.Deliver(ctx, id); err == nil {
				t.Fatalf("%s: Deliver succeeded through a dropped connection", name)
			}
			// Cloud Tasks retries the failed task; a live lease makes it
			// look again later, so retry past the lease too.
			if err := dl.Deliver(ctx, id); err != nil {
				t.Fatalf("%s: retry: %v", name, err)
			}
			clk.Advance(contract.LeaseDuration)
			if err := dl.Deliver(ctx, id); err != nil {
				t.Fatalf("%s: retry after the lease: %v", name, err)
			}
			if b := e.batch(t, id); b.State != store.BatchSent {
				t.Errorf("%s: batch %s, want sent", name, b.State)
			}
			want := int64(1)
			if rtrip == maxDeliverRoundTrips && !delivered {
				want = 2 // the provider accepted it; recording that was lost
			}
			if got := prov.n.Load() - sends; got != want {
				t.Errorf("%s: provider got it %d times, want %d", name, got, want)
			}
		}
	}
}
