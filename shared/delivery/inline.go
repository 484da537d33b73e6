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
// wake-up of what it could not hand on). A push that succeeds at once then
// costs the send request alone, where a task costs a create, a dispatch and
// the deliver request.
//
// A send's answer waits on the providers at most InlineBudget
// (Options.Budget: the deadline of the ctx admission gives every Schedule
// call of one request), whatever the number of registrations: a batch whose
// delivery has not started by then goes to the next scheduler, due now, and
// one whose provider call overruns it is cut short and recorded as a retry
// (Deliverer.Deliver), so nothing goes on after the answer.
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

// InlineBudget is how long a send's answer may wait on the deliveries
// Inline makes, for the whole request: well under the 2 s after which the
// desktop retries an unconfirmed send (issue 29), with room for the
// outcomes cut short at it to be recorded.
const InlineBudget = time.Second

// NewInline returns an Inline scheduler that delivers through d, hands
// everything else to next, and reads what is due now from clk; every
// argument is required.
func NewInline(d *Deliverer, next Scheduler, clk clock.Clock) (*Inline, error) {
	if d == nil || next == nil || clk == nil {
		return nil, fmt.Errorf("%w: NewInline needs a Deliverer, a Scheduler and a Clock", ErrBadOptions)
	}
	return &Inline{deliverer: d, next: next, clock: clk}, nil
}

// Schedule delivers batchID now when it is due by now, key is empty (a
// batch's own due time, as admission asks) and ctx's budget has not run
// out; or hands it to the next scheduler, as it does a batch whose delivery
// failed.
func (s *Inline) Schedule(ctx context.Context, batchID, registrationID string, at time.Time, key string) error {
	if key != "" || at.After(s.clock.Now()) || ctx.Err() != nil {
		return s.next.Schedule(context.WithoutCancel(ctx), batchID, registrationID, at, key)
	}
	if err := s.deliverer.Deliver(ctx, batchID); err != nil {
		return s.next.Schedule(context.WithoutCancel(ctx), batchID, registrationID, at, key)
	}
	return nil
}

// ScheduleLeased delivers l, a batch admission leased with its insert, when
// ctx's budget has not run out. When the budget ran out first, it gives the
// lease back and hands the batch to the next scheduler, due now; a lease it
// could not give back runs out on its own and the sweep hands the batch to
// a task (lostGrace), as for a delivery whose process died. When the
// delivery fails (the database), the batch goes to the next scheduler, due
// now, as Schedule's does: its lease stands, and the task finds what is
// left to do once it runs out.
func (s *Inline) ScheduleLeased(ctx context.Context, l Leased) error {
	if ctx.Err() == nil {
		if err := s.deliverer.DeliverLeased(ctx, l); err == nil {
			return nil
		}
		// The batch may be anywhere between leased and ended: its lease
		// (or its end) stands, and the task finds what is left to do once
		// the lease runs out.
		return s.next.Schedule(context.WithoutCancel(ctx), l.Batch.ID, l.Batch.RegistrationID, s.clock.Now(), "")
	}
	released, err := s.deliverer.ReleaseLeased(ctx, l)
	if err != nil || !released {
		return err
	}
	return s.next.Schedule(context.WithoutCancel(ctx), l.Batch.ID, l.Batch.RegistrationID, s.clock.Now(), "")
}

// leaser is a Scheduler that takes batches admission leased with their
// insert: Inline.
type leaser interface {
	ScheduleLeased(ctx context.Context, l Leased) error
}
