package delivery

import (
	"context"
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
// run prunes all of them, chunk after chunk, until challengeBudget has passed
// (issue 26 §2: 20,000 a run was outgrown by a flood of 333 a second).
const (
	sweepChunk  = 2000
	sweepRounds = 10
	// challengeBudget is real time, for it bounds how long the run holds
	// Cloud Scheduler's attempt (60 s, infra/tasks.tf) with the rest of the
	// work still to do; it decides nothing about a row.
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
// every minute: it expires overdue batches, prunes what retention lets go,
// and re-schedules due batches whose task was lost.
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
	Expired      int64            `json:"expired"`
	Pruned       map[string]int64 `json:"pruned"`
	Rescheduled  int              `json:"rescheduled"`
	ScheduleFail int              `json:"scheduleFailed"`
}

// Sweep runs once at the clock's now.
func (s *Sweeper) Sweep(ctx context.Context) (SweepReport, error) {
	now := s.clock.Now().UnixMilli()
	r := SweepReport{Pruned: make(map[string]int64)}
	for range sweepRounds {
		n, err := s.store.ExpireOverdue(ctx, now, sweepChunk)
		if err != nil {
			return r, fmt.Errorf("sweep: %w", err)
		}
		r.Expired += n
		if n < sweepChunk {
			break
		}
	}
	s.counters.Add(obs.DeliveryExpired, r.Expired)
	n, err := s.pruneChallenges(ctx, now-contract.ChallengeGrace.Milliseconds())
	r.Pruned["push_challenges"] = n
	if err != nil {
		return r, fmt.Errorf("sweep: %w", err)
	}
	for range sweepRounds {
		pruned, err := s.store.Prune(ctx, now,
			contract.HostRetention.Milliseconds(), contract.Retention.Milliseconds(), sweepChunk)
		if err != nil {
			return r, fmt.Errorf("sweep: %w", err)
		}
		full := false
		for t, n := range pruned {
			r.Pruned[t] += n
			full = full || n == sweepChunk
		}
		if !full {
			break
		}
	}
	lost, err := s.store.LostBatches(ctx, now, lostGrace.Milliseconds(), sweepChunk)
	if err != nil {
		return r, fmt.Errorf("sweep: %w", err)
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
	return r, nil
}

// pruneChallenges deletes every challenge that expired before before, in
// chunks of sweepChunk, until none is left or challengeBudget has passed, and
// returns how many it deleted.
func (s *Sweeper) pruneChallenges(ctx context.Context, before int64) (int64, error) {
	budget, cancel := context.WithTimeout(ctx, challengeBudget)
	defer cancel()
	var total int64
	for budget.Err() == nil {
		n, err := s.store.PruneChallenges(ctx, before, sweepChunk)
		total += n
		if err != nil || n < sweepChunk {
			return total, err
		}
	}
	return total, nil
}
