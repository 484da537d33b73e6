package delivery

import (
	"context"
	"time"
)

// Scheduler asks for a batch to be delivered at a time. Admission calls it
// after commit for every new or newly-due batch; package tasks implements it
// with Cloud Tasks. A repeated call for the same batch and time must be
// harmless, and a failure is never fatal: the sweep re-schedules due batches
// whose task was lost.
type Scheduler interface {
	// Schedule asks for batchID to be delivered at at.
	Schedule(ctx context.Context, batchID string, at time.Time) error
}

// NopScheduler schedules nothing and always succeeds. It stands in where no
// task queue is configured; the sweep then finds the batches.
type NopScheduler struct{}

// Schedule does nothing.
func (NopScheduler) Schedule(context.Context, string, time.Time) error { return nil }
