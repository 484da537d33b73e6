package delivery

import (
	"context"
	"time"
)

// Scheduler asks for a batch to be delivered at a time. Admission calls it
// after commit for every new or newly-due batch, delivery for retries and
// wake-ups; package tasks implements it with Cloud Tasks. A failure is never
// fatal: the sweep re-schedules due batches whose task was lost.
type Scheduler interface {
	// Schedule asks for batchID, a batch of registrationID, to be
	// delivered at at; the registration picks the queue, so that one
	// phone's tasks stay in one queue. A repeated call
	// with the same batch, time and key must be harmless (one delivery
	// attempt); another key is another attempt. The key is empty for a
	// batch's due times and retries, and names the lease that held the
	// batch back for a wake-up, which may fall on a time the batch was
	// already scheduled for.
	Schedule(ctx context.Context, batchID, registrationID string, at time.Time, key string) error
}

// NopScheduler schedules nothing and always succeeds. It stands in where no
// task queue is configured; the sweep then finds the batches.
type NopScheduler struct{}

// Schedule does nothing.
func (NopScheduler) Schedule(context.Context, string, string, time.Time, string) error { return nil }
