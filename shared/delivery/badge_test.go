package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store/storetest"
)

// scriptedProvider answers Retry for the first retries messages, Sent
// after (Terminal when terminal is set), and keeps the badge of each
// message it got. during, when set, runs once within the next call, as
// what happens while a delivery is in flight.
type scriptedProvider struct {
	mu       sync.Mutex
	retries  int
	terminal bool
	badges   []int64
	during   func()
}

func (p *scriptedProvider) Send(_ context.Context, _ push.Target, m push.Message) push.Outcome {
	p.mu.Lock()
	during := p.during
	p.during = nil
	p.mu.Unlock()
	if during != nil {
		during()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.badges = append(p.badges, m.Badge)
	if p.retries > 0 {
		p.retries--
		return push.Outcome{Kind: push.Retry, Reason: "unavailable"}
	}
	if p.terminal {
		return push.Outcome{Kind: push.Terminal, Reason: "InvalidArgument"}
	}
	return push.Outcome{Kind: push.Sent}
}

// TestDeliverRoundTripsWithBadge counts a delivery's SQL round trips
// through a proxy in front of PostgreSQL, for a batch sent at once and one
// whose first attempt is retried and whose second is sent, to a
// registration without a badge and to one with: the badge adds one round
// trip to a first attempt (store.StampBadge: the raise, the stamp and COMMIT
// in one), and none to a retry, which reads its number with the claim; a
// push that ends unsent gives its raise back in two more. A registration
// without a badge keeps TestDeliverRoundTrips' count, which that test holds.
func TestDeliverRoundTripsWithBadge(t *testing.T) {
	s, rt := mustCountingStore(t, 0)
	clk := clock.NewManual(start)
	e := mustEnvOn(t, s, clk)
	prov := &scriptedProvider{}
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(t), Store: s, Clock: clk,
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
	// attempts delivers a new alert to reg: sent at once, and again an
	// alert whose first attempt is retried, then sent. It returns the round
	// trips of the three deliveries.
	attempts := func(reg string) (sent, first, retry int64) {
		for range 3 { // the first runs also prepare each statement
			for _, retries := range []int{0, 1} {
				seq++
				prov.retries = retries
				e.mustSend(t, contract.StatusQueued, "host", alert("n", seq), reg)
				id := e.sched.take()[0].BatchID
				clk.Advance(contract.DefaultCoalesce)
				if retries == 0 {
					sent = deliver(id)
					continue
				}
				first = deliver(id)
				clk.Advance(contract.MaxBackoff)
				retry = deliver(id)
			}
		}
		return sent, first, retry
	}
	ps, pf, pr := attempts(plain)
	prov.badges = nil
	bs, bf, br := attempts(badged)
	t.Logf("round trips: sent at once, first attempt retried, retry sent: without a badge %d, %d, %d; with one %d, %d, %d",
		ps, pf, pr, bs, bf, br)
	if ps != maxDeliverRoundTrips || bs != ps+1 || bf != pf+1 || br != pr {
		t.Errorf("with a badge %d, %d, %d round trips, want %d, %d, %d (without %d, %d, %d)", bs, bf, br, ps+1, pf+1, pr, ps, pf, pr)
	}
	if got := fmt.Sprint(prov.badges); got != "[1 2 2 3 4 4 5 6 6]" {
		t.Errorf("badges sent %s, want [1 2 2 3 4 4 5 6 6] (each retry the count as it stands)", got)
	}
	// A push the provider refuses ends like a sent one, and gives its
	// raise back in the same transaction and round trip as its end
	// (store.EndLeasedBatch): no round trip more.
	refused := func(reg string) int64 {
		prov.terminal = true
		defer func() { prov.terminal = false }()
		seq++
		e.mustSend(t, contract.StatusQueued, "host", alert("n", seq), reg)
		id := e.sched.take()[0].BatchID
		clk.Advance(contract.DefaultCoalesce)
		return deliver(id)
	}
	var pt, bt int64
	for range 3 { // the first runs also prepare each statement
		pt, bt = refused(plain), refused(badged)
	}
	t.Logf("round trips of a push the provider refuses: without a badge %d, with one %d", pt, bt)
	if pt != ps || bt != bs {
		t.Errorf("refused: %d and %d round trips without and with a badge, want %d and %d", pt, bt, ps, bs)
	}
}

// TestBadgeNeverPushesPastTheLimit: an alert that fits the providers' 4096
// bytes without its badge but not with it goes without it, rather than
// being refused by the provider; the next one carries its badge again.
func TestBadgeNeverPushesPastTheLimit(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			clk := clock.NewManual(start)
			e := mustEnvOn(t, storetest.Open(t, d), clk)
			prov := &scriptedProvider{}
			dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(t), Store: e.store, Clock: clk,
				Counters:  obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil))),
				Scheduler: delivery.NopScheduler{}, APNS: prov, FCM: prov})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			reg := e.device(t, "host", "phone")
			if err := e.store.SetBadge(ctx, "host", reg, contract.MaxBadge, e.now()); err != nil {
				t.Fatal(err)
			}
			// The longest worktreeId of '<' (six bytes on the wire) whose
			// alert fits without a badge: with 99999, the count at its cap,
			// it does not.
			big := alert("big", 1)
			for k := 1; ; k++ {
				n := big
				n.WorktreeID = strings.Repeat("<", k)
				m := push.Build("host", []contract.Notification{n}, e.now()+contract.EventLifetime.Milliseconds())
				if len(apns.Body(m)) > contract.MaxProviderPayload || fcm.Size(m) > contract.MaxProviderPayload {
					break
				}
				big = n
			}
			m := push.Build("host", []contract.Notification{big}, e.now()+contract.EventLifetime.Milliseconds())
			m.Badge = contract.MaxBadge
			if len(apns.Body(m)) <= contract.MaxProviderPayload && fcm.Size(m) <= contract.MaxProviderPayload {
				t.Fatalf("the case is wrong: with its badge the alert is %d bytes to APNs, %d to FCM", len(apns.Body(m)), fcm.Size(m))
			}
			for _, n := range []contract.Notification{big, alert("small", 2)} {
				e.mustSend(t, contract.StatusQueued, "host", n, reg)
				clk.Advance(contract.DefaultCoalesce)
				for _, c := range e.sched.take() {
					if err := dl.Deliver(ctx, c.BatchID); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := fmt.Sprint(prov.badges); got != "[0 99999]" {
				t.Errorf("badges sent %s, want [0 99999]: the big alert without, the next with its count", got)
			}
		})
	}
}
