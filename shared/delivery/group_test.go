package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestSendsShareTransactions lines up, behind a busy slot of a store with
// one (a pool of 4), six sends from each of four hosts three alerts short of
// their quota. The sends go in groups of one per host
// (store.Store.SharedHostTx), in at most half the round trips they take
// alone, and every rule holds as when each is alone: exactly three of each
// host's six are queued and the others rate_limited, and each queued alert
// has its event, recipient and place in a batch. Then a send of a host
// whose session was revoked shares a group with another: it is refused with
// nothing written, and the other is answered as alone.
func TestSendsShareTransactions(t *testing.T) {
	ctx := context.Background()
	s, rt := mustCountingStore(t, 4)
	e := mustEnvOn(t, s, clock.NewManual(start))
	hosts := []string{"hostA", "hostB", "hostC", "hostD"}
	phones := map[string]string{}
	for _, h := range append(hosts, "hostE") {
		phones[h] = e.device(t, h, "phone")
		if err := s.HostTx(ctx, h, func(tx *store.Tx) error {
			return tx.ReplaceSession(ctx, h, "token-"+h, e.now()+time.Hour.Milliseconds(), e.now())
		}); err != nil {
			t.Fatal(err)
		}
		if h == "hostE" {
			continue
		}
		for i := range contract.AlertQuota - 3 {
			e.mustSend(t, contract.StatusQueued, h, alert("fill", int64(i)), phones[h])
		}
	}
	if err := s.HostTx(ctx, "hostE", func(tx *store.Tx) error {
		return tx.ReplaceSession(ctx, "hostE", "token-hostE-new", e.now()+time.Hour.Milliseconds(), e.now())
	}); err != nil {
		t.Fatal(err)
	}
	before := e.rows(t)

	free := storetest.HoldSlot(t, s)
	type result struct {
		host     string
		statuses []contract.Status
		err      error
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	send := func(host string, seq int64) {
		res, err := e.adm.SendAs(ctx, host, "token-"+host, contract.SendRequest{
			RegistrationIDs: []string{phones[host]}, Notification: alert(fmt.Sprintf("burst-%d", seq), 10_000+seq)})
		r := result{host: host, err: err}
		for _, x := range res {
			r.statuses = append(r.statuses, x.Status)
		}
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	}
	sends := 0
	for i := range 6 {
		for _, h := range hosts {
			wg.Go(func() { send(h, int64(i)) })
			sends++
			storetest.WaitFor(t, func() bool { return s.SharedWaiting() == sends })
		}
	}
	trips := rt.Load()
	free()
	wg.Wait()
	trips = rt.Load() - trips

	// The revoked session fails the group it is in, so the others run
	// again alone; its send writes nothing.
	free = storetest.HoldSlot(t, s)
	wg.Go(func() { send("hostA", 100) })
	storetest.WaitFor(t, func() bool { return s.SharedWaiting() == 1 })
	wg.Go(func() { send("hostE", 0) })
	storetest.WaitFor(t, func() bool { return s.SharedWaiting() == 2 })
	free()
	wg.Wait()

	queued := map[string]int{}
	for _, r := range results {
		if r.host == "hostE" {
			if !errors.Is(r.err, contract.ErrInvalidToken) {
				t.Errorf("hostE's revoked session: %v, want ErrInvalidToken", r.err)
			}
			continue
		}
		if r.err != nil {
			t.Fatalf("%s: %v", r.host, r.err)
		}
		switch r.statuses[0] {
		case contract.StatusQueued:
			queued[r.host]++
		case contract.StatusRateLimited:
		default:
			t.Errorf("%s: status %q", r.host, r.statuses[0])
		}
	}
	for _, h := range hosts {
		if queued[h] != 3 {
			t.Errorf("%s: %d of its sends queued, want the 3 its quota left", h, queued[h])
		}
	}
	e.mustRows(t, maps(before, map[string]int64{"events": 12, "recipients": 12}))
	for _, h := range hosts {
		batches, err := s.RegistrationBatches(ctx, phones[h])
		if err != nil {
			t.Fatal(err)
		}
		members := 0
		for _, b := range batches {
			members += b.Members
		}
		if members != contract.AlertQuota {
			t.Errorf("%s's phone has %d alerts in its batches, want %d", h, members, contract.AlertQuota)
		}
	}
	// Alone, each send takes at least newAlertRoundTrips.
	if alone := int64(sends * newAlertRoundTrips); trips*2 > alone {
		t.Errorf("%d sends took %d round trips, want at most half of %d", sends, trips, alone)
	}
	t.Logf("%d sends, %d round trips", sends, trips)
}

// maps returns base with add's counts added.
func maps(base, add map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(base))
	for k, v := range base {
		out[k] = v + add[k]
	}
	return out
}
