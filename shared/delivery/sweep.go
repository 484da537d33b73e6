package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
)

// Sweep limits: each statement touches at most sweepChunk rows, and one run
// makes at most sweepRounds passes over batches and retention, so a run stays
// short however much is pending; the next minute's run goes on where this one
// stopped. Expired challenges are the exception: anyone can make them, so a
// run prunes all of them, chunk after chunk, while its budget lasts (issue 26
// §2: 20,000 a run was outgrown by a flood of 333 a second).
const (
	sweepChunk  = 2000
	sweepRounds = 10
	// sweepBudget is how long a run may go on before it starts no more
	// pruning: Cloud Scheduler's attempt lasts 60 s (infra/tasks.tf), and
	// the last chunk and the answer must fit in it. It is read on the
	// clock, and decides nothing about a row.
	sweepBudget = 45 * time.Second

	// challengeBudget is the most of what is left of sweepBudget the
	// challenges may take, so that a flood of them leaves retention some.
	challengeBudget = 30 * time.Second
	// lostGrace is how long after its due time, and after it was last
	// handed to the scheduler, a pending unleased batch is taken for lost.
	lostGrace = 30 * time.Second
)

// SweeperOptions configures a [Sweeper]; every field is required.
type SweeperOptions struct {
	Store     *store.Store
	Clock     clock.Clock
	Counters  *obs.Counters
	Scheduler Scheduler
}

// Sweeper is the work of the sweep function, which Cloud Scheduler calls
// every minute: it expires overdue batches (giving back their badge
// raises), re-schedules due batches whose task was lost, and then prunes
// what retention lets go.
type Sweeper struct {
	store     *store.Store
	clock     clock.Clock
	counters  *obs.Counters
	scheduler Scheduler
}

// NewSweeper returns a Sweeper, or ErrBadOptions when a dependency is
// missing.
func NewSweeper(o SweeperOptions) (*Sweeper, error) {
	if o.Store == nil || o.Clock == nil || o.Counters == nil || o.Scheduler == nil {
		return nil, fmt.Errorf("%w: Store, Clock, Counters and Scheduler are required", ErrBadOptions)
	}
	return &Sweeper{store: o.Store, clock: o.Clock, counters: o.Counters, scheduler: o.Scheduler}, nil
}

// SweepReport says what one run did.
type SweepReport struct {
	// CutOff counts the sessions ended for waiting in a transaction for
	// their client longer than the sessions' idle timeout (their locks
	// freed: store.CutOffSilent).
	CutOff  int64 `json:"cutOff"`
	Expired int64 `json:"expired"`
	// BadgesGivenBack counts the batches the run expired whose badge
	// raise it gave back with their end.
	BadgesGivenBack int64            `json:"badgesGivenBack"`
	Pruned          map[string]int64 `json:"pruned"`
	Rescheduled     int              `json:"rescheduled"`
	ScheduleFail    int              `json:"scheduleFailed"`
}

// Sweep runs once at the clock's now. A transaction whose client went
// silent between its round trips is cut off first (store.CutOffSilent), so
// that the host it locks can send again. The rescue goes next: overdue
// batches are expired (their badge raises given back as they end), and
// lost batches are re-scheduled, the only recovery of an
// inline delivery whose process died. Pruning (challenges, then retention)
// gets what is left of sweepBudget. Every step runs whatever became of the
// others, so a failed prune never skips the rescue nor a failed step the
// rest; the error joins every step's.
func (s *Sweeper) Sweep(ctx context.Context) (SweepReport, error) {
	began := s.clock.Now()
	now := began.UnixMilli()
	r := SweepReport{Pruned: make(map[string]int64)}
	var errs []error
	fail := func(err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep: %w", err))
		}
	}
	cut, err := s.store.CutOffSilent(ctx)
	r.CutOff = cut
	s.counters.Add(obs.SweepCutOff, cut)
	fail(err)
	fail(s.expire(ctx, now, &r))
	fail(s.rescue(ctx, now, &r))
	deadline := began.Add(sweepBudget)
	n, err := s.pruneChallenges(ctx, now-contract.ChallengeGrace.Milliseconds(), minTime(deadline, s.clock.Now().Add(challengeBudget)))
	r.Pruned["push_challenges"] = n
	fail(err)
	fail(s.prune(ctx, now, deadline, &r))
	return r, errors.Join(errs...)
}

// expire ends the overdue batches, sweepChunk at a time, at most
// sweepRounds chunks.
func (s *Sweeper) expire(ctx context.Context, now int64, r *SweepReport) error {
	defer func() { s.counters.Add(obs.DeliveryExpired, r.Expired) }()
	for range sweepRounds {
		n, given, err := s.store.ExpireOverdue(ctx, now, sweepChunk)
		r.Expired += n
		r.BadgesGivenBack += given
		if err != nil || n < sweepChunk {
			return err
		}
	}
	return nil
}

// rescue re-schedules the due batches whose task may be lost.
func (s *Sweeper) rescue(ctx context.Context, now int64, r *SweepReport) error {
	lost, err := s.store.LostBatches(ctx, now, lostGrace.Milliseconds(), sweepChunk)
	if err != nil {
		return err
	}
	for _, b := range lost {
		if err := s.scheduler.Schedule(ctx, b.ID, b.RegistrationID, time.UnixMilli(now), ""); err != nil {
			r.ScheduleFail++
			s.counters.Inc(obs.ScheduleFailed)
			continue
		}
		r.Rescheduled++
	}
	s.counters.Add(obs.SweepRescheduled, int64(r.Rescheduled))
	return nil
}

// pruneChallenges deletes every challenge that expired before before, in
// chunks of sweepChunk, until none is left or the clock reads until, and
// returns how many it deleted.
func (s *Sweeper) pruneChallenges(ctx context.Context, before int64, until time.Time) (int64, error) {
	var total int64
	for s.clock.Now().Before(until) {
		n, err := s.store.PruneChallenges(ctx, before, sweepChunk)
		total += n
		if err != nil || n < sweepChunk {
			return total, err
		}
	}
	return total, nil
}

// prune deletes what retention lets go, at most sweepRounds chunks, while
// the clock reads before deadline.
func (s *Sweeper) prune(ctx context.Context, now int64, deadline time.Time, r *SweepReport) error {
	for range sweepRounds {
		if !s.clock.Now().Before(deadline) {
			return nil
		}
		pruned, err := s.store.Prune(ctx, now,
			contract.HostRetention.Milliseconds(), contract.Retention.Milliseconds(), sweepChunk)
		full := false
		for t, n := range pruned {
			r.Pruned[t] += n
			full = full || n == sweepChunk
		}
		if err != nil || !full {
			return err
		}
	}
	return nil
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
