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
// makes at most sweepRounds passes, so a run stays short however much is
// pending; the next minute's run goes on where this one stopped.
const (
	sweepChunk  = 2000
	sweepRounds = 10
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
	for range sweepRounds {
		pruned, err := s.store.Prune(ctx, now, contract.ChallengeGrace.Milliseconds(),
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
