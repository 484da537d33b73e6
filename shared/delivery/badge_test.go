package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
)

// scriptedProvider answers Retry for the first retries messages, Sent
// after, and keeps the badge of each message it got.
type scriptedProvider struct {
	mu      sync.Mutex
	retries int
	badges  []int64
}

func (p *scriptedProvider) Send(_ context.Context, _ push.Target, m push.Message) push.Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.badges = append(p.badges, m.Badge)
	if p.retries > 0 {
		p.retries--
		return push.Outcome{Kind: push.Retry, Reason: "unavailable"}
	}
	return push.Outcome{Kind: push.Sent}
}

// TestDeliverRoundTripsWithBadge counts a delivery's SQL round trips
// through a proxy in front of PostgreSQL, for a batch whose first attempt
// is retried and whose second is sent, to a registration without a badge
// and to one with: the badge adds one round trip to the first attempt
// (store.StampBadge: the raise, the stamp and COMMIT in one), and none to
// the retry, which reads its number with the claim. A registration without
// a badge keeps TestDeliverRoundTrips' count, which that test holds.
func TestDeliverRoundTripsWithBadge(t *testing.T) {
	s, rt := mustCountingStore(t, 0)
	clk := clock.NewManual(start)
	e := mustEnvOn(t, s, clk)
	prov := &scriptedProvider{}
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Store: s, Clock: clk,
		Counters:  obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil))),
		Scheduler: delivery.NopScheduler{}, APNS: prov, FCM: prov})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain, badged := e.device(t, "host", "plain"), e.device(t, "host", "badged")
	if err := s.SetBadge(ctx, "host", badged, 0, e.now()); err != nil {
		t.Fatal(err)
	}
	deliver := func(id string) int64 {
		t.Helper()
		before := rt.Load()
		if err := dl.Deliver(ctx, id); err != nil {
			t.Fatal(err)
		}
		return rt.Load() - before
	}
	seq := int64(0)
	attempts := func(reg string) (first, retry int64) {
		for range 3 { // the first runs also prepare each statement
			seq++
			prov.retries = 1
			e.mustSend(t, contract.StatusQueued, "host", alert("n", seq), reg)
			id := e.sched.take()[0].BatchID
			clk.Advance(contract.DefaultCoalesce)
			first = deliver(id)
			clk.Advance(contract.MaxBackoff)
			retry = deliver(id)
		}
		return first, retry
	}
	pf, pr := attempts(plain)
	prov.badges = nil
	bf, br := attempts(badged)
	t.Logf("round trips, first attempt (retried) and retry (sent): without a badge %d and %d, with one %d and %d", pf, pr, bf, br)
	if bf != pf+1 || br != pr {
		t.Errorf("with a badge %d and %d round trips, want %d and %d", bf, br, pf+1, pr)
	}
	if got := fmt.Sprint(prov.badges); got != "[1 1 2 2 3 3]" {
		t.Errorf("badges sent %s, want [1 1 2 2 3 3] (each retry its first attempt's)", got)
	}
}
