package delivery_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// rescueCase is, at the clock's now, a registration with a badge whose
// alert was raised at an attempt that was retried and is now overdue, and
// another registration's alert whose task was lost: the sweep's rescue has
// one batch to expire, one raise to give back, and one batch to
// re-schedule. Expired challenges wait to be pruned.
type rescueCase struct {
	*env
	opts       store.Options
	badged     string
	overdue    string
	lost       string
	challenges int
}

// newRescueCase sets a rescueCase up on a fresh database of d.
func newRescueCase(t *testing.T, d storetest.Dialect) *rescueCase {
	t.Helper()
	ctx := context.Background()
	opts := d.Options(t)
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := newBadgeCaseOn(t, s, "badged", 3)
	r := &rescueCase{env: c.env, opts: opts, badged: c.reg, challenges: 3}
	r.overdue = c.alert(t, "a", 1)
	c.deliver(t, r.overdue, 1)
	c.want(t, "[4]", 4)
	expires := c.batch(t, r.overdue).ExpiresAt
	// The other alert was admitted a minute before, and its task lost.
	c.clock.Set(time.UnixMilli(expires - time.Minute.Milliseconds()))
	other := c.device(t, "host", "other")
	c.reg = other
	r.lost = c.alert(t, "b", 2)
	if b := c.batch(t, r.lost); b.RegistrationID != other {
		t.Fatalf("batch %s is %s's, want %s's", r.lost, b.RegistrationID, other)
	}
	for i := range r.challenges {
		if err := s.InsertChallenge(ctx, store.Challenge{ID: "c" + string(rune('0'+i)), HostFingerprint: "h",
			HostPublicKey: "k", ProofHash: "p", Transcript: "t", ExpiresAt: c.now()}); err != nil {
			t.Fatal(err)
		}
	}
	c.clock.Set(time.UnixMilli(expires))
	return r
}

// wantRescued fails unless report and the database show the rescue done.
func (r *rescueCase) wantRescued(t *testing.T, report delivery.SweepReport) {
	t.Helper()
	if report.Expired != 1 || report.Rescheduled != 1 {
		t.Errorf("sweep expired %d and re-scheduled %d batches, want 1 and 1", report.Expired, report.Rescheduled)
	}
	if b := r.batch(t, r.overdue); b.State != store.BatchExpired {
		t.Errorf("overdue batch is %s, want expired", b.State)
	}
	if calls := r.sched.take(); len(calls) != 1 || calls[0].BatchID != r.lost {
		t.Errorf("scheduled %v, want the lost batch %s", calls, r.lost)
	}
	d, err := r.store.Device(context.Background(), r.badged)
	if err != nil {
		t.Fatal(err)
	}
	if d.Badge != 3 {
		t.Errorf("badge %d after the sweep, want the overdue push's raise given back: 3", d.Badge)
	}
}

// TestSweepRescuesWhenAPruneFails: prunes that fail (their tables, the
// challenges' and the sessions', dropped from the database under the
// store) fail the run, but the rescue was made: the overdue batch expired
// and its badge raise given back, the lost batch re-scheduled; and the
// other tables were pruned all the same (a lonely host).
func TestSweepRescuesWhenAPruneFails(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			r := newRescueCase(t, d)
			if err := r.store.HostTx(ctx, "lonely", func(tx *store.Tx) error {
				return tx.TouchHost(ctx, "lonely", "k", r.now()-contract.HostRetention.Milliseconds()-1)
			}); err != nil {
				t.Fatal(err)
			}
			r.sched.take()
			// The challenges' prune, and the first of retention's.
			for _, table := range []string{"push_challenges", "push_sessions"} {
				if _, err := storetest.SQL(t, r.opts).ExecContext(ctx, `DROP TABLE `+table); err != nil {
					t.Fatal(err)
				}
			}
			sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: r.store, Clock: r.clock, Counters: r.counters,
				Scheduler: r.sched})
			if err != nil {
				t.Fatal(err)
			}
			report, err := sw.Sweep(ctx)
			var joined interface{ Unwrap() []error }
			if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
				t.Errorf("Sweep error = %v, want the challenges' and the sessions' prunes' errors", err)
			}
			r.wantRescued(t, report)
			if n := report.Pruned["push_hosts"]; n != 1 {
				t.Errorf("pruned %d hosts, want the lonely one: a failed prune stops no other", n)
			}
		})
	}
}

// slowScheduler is a Scheduler whose first call takes the sweep's whole
// budget: it moves the manual clock on by 45 s.
type slowScheduler struct {
	*recorder
	clock *clock.Manual
	once  sync.Once
}

func (s *slowScheduler) Schedule(ctx context.Context, batchID, registrationID string, at time.Time, key string) error {
	s.once.Do(func() { s.clock.Advance(45 * time.Second) })
	return s.recorder.Schedule(ctx, batchID, registrationID, at, key)
}

// TestSweepPrunesInTheTimeLeft: the rescue goes first and pruning gets what
// is left of the run's budget: when re-scheduling takes it all, the run
// prunes nothing, and the next run prunes the challenges.
func TestSweepPrunesInTheTimeLeft(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			r := newRescueCase(t, d)
			r.sched.take()
			sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: r.store, Clock: r.clock, Counters: r.counters,
				Scheduler: &slowScheduler{recorder: r.sched, clock: r.clock}})
			if err != nil {
				t.Fatal(err)
			}
			report, err := sw.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r.wantRescued(t, report)
			if n := report.Pruned["push_challenges"]; n != 0 {
				t.Errorf("pruned %d challenges after the rescue took the budget, want 0", n)
			}
			if report, err = sw.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if n := report.Pruned["push_challenges"]; n != int64(r.challenges) {
				t.Errorf("the next run pruned %d challenges, want %d", n, r.challenges)
			}
		})
	}
}
