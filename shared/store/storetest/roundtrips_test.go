package storetest_test

import (
	"context"
	"testing"
	"time"

	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestPingNotCounted: a connection idle for more than a second is pinged by
// the pool before it is reused; the proxy does not count that ping, so an
// operation counts the same round trips, and a cut lands on the same one,
// however long the connection sat idle before it.
func TestPingNotCounted(t *testing.T) {
	ctx := context.Background()
	opts, rt := storetest.CountingPostgres(t)
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
	busy := op()
	time.Sleep(1100 * time.Millisecond) // past the pool's one second of idleness
	if idle := op(); idle != busy {
		t.Errorf("after a second idle the operation counts %d round trips, want %d as when busy", idle, busy)
	}
}
