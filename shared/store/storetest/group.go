package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/store"
)

// HoldSlot takes the one group slot of s (a PostgreSQL store opened with a
// pool of 4) with a SharedHostTx call that runs alone and waits, so that
// the calls after it wait for a group (store.Store.SharedWaiting). The
// returned free ends it; it also runs when t ends.
func HoldSlot(t testing.TB, s *store.Store) (free func()) {
	t.Helper()
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.SharedHostTx(context.Background(), "holder", func(*store.Tx) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	free = sync.OnceFunc(func() {
		close(release)
		if err := <-done; err != nil {
			t.Errorf("holder: %v", err)
		}
	})
	t.Cleanup(free)
	return free
}

// WaitFor polls cond until it holds, failing t after ten seconds.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
	}
}
