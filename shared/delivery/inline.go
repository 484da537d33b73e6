package delivery

import (
	"context"
	"fmt"
	"time"

	"onorca.dev/push/shared/clock"
)

// Inline is the Scheduler of admission when ORCA_PUSH_DELIVER_INLINE=1: a
// batch due now (an alert with no coalescing window, a dismissal, a sealed
// alert) is delivered within the call, in the request that made it due, and
// a batch due later goes to the next scheduler (Cloud Tasks), as does
// whatever the delivery itself schedules through its own (its retry, the
// wake-up of what it held back). A push that succeeds at once then costs the
// send request alone, where a task costs a create, a dispatch and the
// deliver request.
//
// Nothing is lost where the task would have carried it: when the delivery
// fails (the database), the batch goes to the next scheduler as it would
// have without Inline; when the process dies in the middle, the batch is
// pending and scheduled at its admission, and the sweep hands it to a task
// once lostGrace has passed, as it does for a task that was lost. The
// claim's lease keeps one delivery per registration in flight either way.
type Inline struct {
	deliverer *Deliverer // delivers the batches due now
	next      Scheduler  // takes every other batch, and those deliverer could not record
	clock     clock.Clock
}

// NewInline returns an Inline scheduler that delivers through d, hands
// everything else to next, and reads what is due now from clk; every
// argument is required.
func NewInline(d *Deliverer, next Scheduler, clk clock.Clock) (*Inline, error) {
	if d == nil || next == nil || clk == nil {
		return nil, fmt.Errorf("%w: NewInline needs a Deliverer, a Scheduler and a Clock", ErrBadOptions)
	}
	return &Inline{deliverer: d, next: next, clock: clk}, nil
}

// Schedule delivers batchID now when it is due by now and key is empty (a
// batch's own due time, as admission asks), or hands it to the next
// scheduler, as it does a batch whose delivery failed.
func (s *Inline) Schedule(ctx context.Context, batchID, registrationID string, at time.Time, key string) error {
	if key != "" || at.After(s.clock.Now()) {
		return s.next.Schedule(ctx, batchID, registrationID, at, key)
	}
	if err := s.deliverer.Deliver(ctx, batchID); err != nil {
		return s.next.Schedule(ctx, batchID, registrationID, at, key)
	}
	return nil
}
