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
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestSweepRetention checks every retention rule at its boundary: challenges
// 30 s after expiry, sessions at expiry, hosts after an hour without contact
// unless a device names them, identities, fences and finished batches after 24 h, and overdue
// pending batches expired with their payload cleared.
func TestSweepRetention(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			e := mustEnv(t, d)
			sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: e.store, Clock: e.clock, Counters: e.counters, Scheduler: e.sched})
			if err != nil {
				t.Fatal(err)
			}
			t0 := e.now()
			if err := e.store.InsertChallenge(ctx, store.Challenge{ID: "c", HostFingerprint: "h", HostPublicKey: "k",
				ProofHash: "p", Transcript: "t", ExpiresAt: t0 + contract.ChallengeTTL.Milliseconds()}); err != nil {
				t.Fatal(err)
			}
			err = e.store.HostTx(ctx, "lonely", func(tx *store.Tx) error {
				if err := tx.TouchHost(ctx, "lonely", "k", t0); err != nil {
					return err
				}
				if err := tx.TouchHost(ctx, "host", "k", t0); err != nil {
					return err
				}
				return tx.ReplaceSession(ctx, "host", "hash", t0+contract.SessionTTL.Milliseconds(), t0)
			})
			if err != nil {
				t.Fatal(err)
			}
			reg := e.device(t, "host", "phone")
			e.mustSend(t, contract.StatusQueued, "host", alert("n1", 1), reg)
			dismiss := dismissal("n0", 1)
			e.mustSend(t, contract.StatusQueued, "host", dismiss, reg)
			sweep := func() delivery.SweepReport {
				t.Helper()
				r, err := sw.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			count := func(table string) int64 {
				t.Helper()
				n, err := e.store.RowCounts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return n[table]
			}

			e.clock.Set(time.UnixMilli(t0 + (contract.ChallengeTTL + contract.ChallengeGrace).Milliseconds()))
			sweep()
			if count("push_challenges") != 1 {
				t.Fatal("challenge pruned at expiry + 30 s, want kept until after")
			}
			e.clock.Advance(time.Millisecond)
			sweep()
			if count("push_challenges") != 0 {
				t.Fatal("challenge kept after expiry + 30 s")
			}
			// The alert's batch is overdue after 5 minutes: expired, payload cleared.
			e.clock.Set(time.UnixMilli(t0 + contract.EventLifetime.Milliseconds()))
			if r := sweep(); r.Expired != 2 {
				t.Fatalf("expired %d batches, want the alert's and the dismissal's", r.Expired)
			}
			e.clock.Set(time.UnixMilli(t0 + contract.HostRetention.Milliseconds() + 1))
			sweep()
			if n := count("push_hosts"); n != 1 {
				t.Fatalf("%d hosts after an hour, want only the one a device names", n)
			}
			// Finished batches go 24 h after they finished (the expiry above).
			e.clock.Set(time.UnixMilli(t0 + (contract.EventLifetime + contract.Retention).Milliseconds() + 1))
			sweep()
			for _, table := range store.Tables {
				want := int64(0)
				if table == "push_hosts" || table == "push_devices" {
					want = 1
				}
				if n := count(table); n != want {
					t.Errorf("%s: %d rows after 24 h, want %d", table, n, want)
				}
			}
		})
	}
}

// TestSweepPrunesEveryExpiredChallenge: one run deletes every challenge past
// its grace, however many a flood left, in chunks, and keeps the live ones.
// A run used to stop at 20,000 (10 chunks of 2000), so a flood above 333 a
// second outgrew the sweep (issue 26 §2).
func TestSweepPrunesEveryExpiredChallenge(t *testing.T) {
	const expired, live = 25_000, 3
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			opts := d.Options(t)
			s, err := store.Open(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			e := mustEnvOn(t, s, clock.NewManual(start))
			sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: e.store, Clock: e.clock, Counters: e.counters, Scheduler: e.sched})
			if err != nil {
				t.Fatal(err)
			}
			gone := e.now() - contract.ChallengeGrace.Milliseconds() - 1
			// One statement writes them all: 25,000 round trips would be the
			// test's whole run time.
			_, err = storetest.SQL(t, opts).ExecContext(ctx, fmt.Sprintf(`INSERT INTO push_challenges
				(challenge_id, host_fingerprint, host_public_key, secret_hash, transcript, expires_at)
				WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
				SELECT 'c' || i, 'h', 'k', 'p', 't', CASE WHEN i <= %d THEN %d ELSE %d END FROM n`,
				expired+live, expired, gone, e.now()+contract.ChallengeTTL.Milliseconds()))
			if err != nil {
				t.Fatal(err)
			}
			r, err := sw.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Pruned["push_challenges"]; got != expired {
				t.Errorf("Sweep pruned %d challenges, want %d", got, expired)
			}
			n, err := e.store.RowCounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n["push_challenges"] != live {
				t.Errorf("%d challenges after one sweep, want the %d live ones", n["push_challenges"], live)
			}
		})
	}
}

// TestSweepCutsOffASilentTransaction: the sweep ends a session that has
// waited for its client's next round trip in the middle of a transaction
// longer than the idle timeout its session sets (5 s, on the server's
// clock: it waits that long), so that the host it locks can send again
// (PostgreSQL; store.CutOffSilent holds the mechanism).
func TestSweepCutsOffASilentTransaction(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t, storetest.Postgres(t))
	sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: e.store, Clock: e.clock, Counters: e.counters, Scheduler: e.sched})
	if err != nil {
		t.Fatal(err)
	}
	held, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(resume) }) }
	t.Cleanup(release)
	silent := make(chan error, 1)
	go func() {
		silent <- e.store.HostTx(ctx, "hostA", func(tx *store.Tx) error {
			if _, err := tx.Challenge(ctx, "none"); err == nil {
				return errors.New("a challenge named none")
			}
			close(held)
			<-resume
			return tx.TouchHost(ctx, "hostA", "silent", 1)
		})
	}()
	<-held
	if r, err := sw.Sweep(ctx); err != nil || r.CutOff != 0 {
		t.Fatalf("Sweep at once: cut off %d (%v), want none", r.CutOff, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		r, err := sw.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.CutOff == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Sweep cut off %d sessions, want the silent one", r.CutOff)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := e.counters.Totals()[obs.SweepCutOff]; n != 1 {
		t.Errorf("counter %s = %d, want 1", obs.SweepCutOff, n)
	}
	if err := e.store.HostTx(ctx, "hostA", func(tx *store.Tx) error { return tx.TouchHost(ctx, "hostA", "after", 2) }); err != nil {
		t.Fatalf("the host's next transaction: %v", err)
	}
	release()
	if err := <-silent; err == nil {
		t.Error("the silent transaction committed after its session was ended")
	}
}
