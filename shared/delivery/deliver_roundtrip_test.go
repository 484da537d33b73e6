package delivery_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// sentProvider accepts every message; it stands for a provider in a round
// trip count, where only the SQL is measured.
type sentProvider struct{}

func (sentProvider) Send(context.Context, push.Target, push.Message) push.Outcome {
	return push.Outcome{Kind: push.Sent}
}

// TestDeliverRoundTrips counts the SQL round trips of one delivery (claim,
// device, fences, record) through a proxy in front of PostgreSQL.
func TestDeliverRoundTrips(t *testing.T) {
	opts, rt := storetest.CountingPostgres(t)
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	clk := clock.NewManual(start)
	e := mustEnvOn(t, s, clk)
	counters := obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Store: s, Clock: clk, Counters: counters,
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
	if last > 7 {
		t.Fatalf("%d round trips per delivery, want at most 7", last)
	}
}
