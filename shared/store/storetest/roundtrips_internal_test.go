package storetest

import (
	"context"
	"testing"
	"time"

	"onorca.dev/push/shared/store"
)

// mustTouch opens a store of one connection behind the counting proxy and
// returns an operation of one statement that reports how many round trips it
// made, already run twice (the first prepares its statement), and that
// count.
func mustTouch(t *testing.T) (op func() int64, want int64, rt *RoundTrips) {
	t.Helper()
	ctx := context.Background()
	opts, rt := CountingPostgres(t)
	opts.PoolMax = 1
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	op = func() int64 {
		before := rt.Load()
		if err := s.Tx(ctx, func(tx *store.Tx) error { return tx.TouchHost(ctx, "host", "key", 1) }); err != nil {
			t.Fatal(err)
		}
		return rt.Load() - before
	}
	op()
	return op, op(), rt
}

// TestPingNotCounted: a connection idle for more than a second is pinged by
// the pool before it is reused; the proxy does not count that ping, so an
// operation counts the same round trips, and a cut lands on the same one,
// however long the connection sat idle before it.
func TestPingNotCounted(t *testing.T) {
	op, want, _ := mustTouch(t)
	time.Sleep(1100 * time.Millisecond) // past the pool's one second of idleness
	if got := op(); got != want {
		t.Errorf("after a second idle the operation counts %d round trips, want %d as when busy", got, want)
	}
}

// TestCountedBeforeTheServerSeesIt: a round trip is in the count as soon as
// its client has the answer, however late the proxy's goroutine runs, so a
// Cut made right after an operation counts from the right place. Counted
// after the server got it, a descheduled proxy left the last round trip out
// and the next Cut landed one round trip early (CI failed
// TestConnectionLostMidAdmission that way, and a cut on a round trip already
// answered hung it).
func TestCountedBeforeTheServerSeesIt(t *testing.T) {
	op, want, rt := mustTouch(t)
	late := func() { time.Sleep(50 * time.Millisecond) } // a proxy goroutine that runs late
	rt.p.beforeCount.Store(&late)
	if got := op(); got != want {
		t.Errorf("with the proxy late, the operation's round trips are %d when it returns, want %d", got, want)
	}
}
