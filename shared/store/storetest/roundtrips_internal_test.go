package storetest

import (
	"context"
	"testing"
	"time"

	"onorca.dev/push/shared/store"
)

// TestCountedBeforeTheServerSeesIt: a round trip is in the count as soon as
// its client has the answer, however late the proxy's goroutine runs, so a
// Cut made right after an operation counts from the right place. Counted
// after the server got it, a descheduled proxy left the last round trip out
// and the next Cut landed one round trip early (CI failed
// TestConnectionLostMidAdmission that way, and a cut on a round trip already
// answered hung it).
func TestCountedBeforeTheServerSeesIt(t *testing.T) {
	ctx := context.Background()
	opts, rt := CountingPostgres(t)
	opts.PoolMax = 1
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	op := func() int64 {
		before := rt.Load()
		if err := s.Tx(ctx, func(tx *store.Tx) error { return tx.TouchHost(ctx, "host", "key", 1) }); err != nil {
			t.Fatal(err)
		}
		return rt.Load() - before
	}
	op() // prepares the statement on the connection
	want := op()
	late := func() { time.Sleep(50 * time.Millisecond) } // a proxy goroutine that runs late
	rt.p.beforeCount.Store(&late)
	if got := op(); got != want {
		t.Errorf("with the proxy late, the operation's round trips are %d when it returns, want %d", got, want)
	}
}
