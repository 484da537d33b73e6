package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/store"
)

// HoldSlot takes the one group slot of s (a PostgreSQL store opened with a
// pool of 4) with a SharedHostTx call that runs alone and waits, so that
// the calls after it wait for a group (store.Store.SharedWaiting). The
// returned free ends it; it also runs when t ends. The call's host is its
// own: host locks are the database's, and a slot's call whose lock is busy
// gives the slot up.
func HoldSlot(t testing.TB, s *store.Store) (free func()) {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	host := "holder-" + hex.EncodeToString(b[:])
	return HoldTx(t, func(fn func(*store.Tx) error) error {
		return s.SharedHostTx(context.Background(), host, fn)
	}, nil)
}

// HoldTx starts run with a transaction's fn that runs first, when not nil,
// and then waits; HoldTx returns once first has returned. The returned free
// ends the transaction and fails t if run failed; it also runs when t ends,
// so that a test that fails early does not leave a connection held and the
// store's Close waiting for it.
func HoldTx(t testing.TB, run func(fn func(*store.Tx) error) error, first func(*store.Tx) error) (free func()) {
	t.Helper()
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- run(func(tx *store.Tx) error {
			if first != nil {
				if err := first(tx); err != nil {
					return err
				}
			}
			close(started)
			<-release
			return nil
		})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("hold: %v", err)
	}
	free = sync.OnceFunc(func() {
		close(release)
		if err := <-done; err != nil {
			t.Errorf("hold: %v", err)
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
