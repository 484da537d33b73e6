package httpx

import (
	"context"
	"sync/atomic"
)

// admission bounds concurrent session lookups: running at once, at most
// waiting queued behind them, and a refusal beyond that (reference-behaviour
// §2.7). A released slot goes to a waiter.
type admission struct {
	slots   chan struct{}
	waiting atomic.Int32
	maxWait int32
}

func newAdmission(running, waiting int) *admission {
	return &admission{slots: make(chan struct{}, running), maxWait: int32(waiting)}
}

// acquire reports whether the caller got a slot; it must then call release.
func (a *admission) acquire(ctx context.Context) bool {
	select {
	case a.slots <- struct{}{}:
		return true
	default:
	}
	if a.waiting.Add(1) > a.maxWait {
		a.waiting.Add(-1)
		return false
	}
	defer a.waiting.Add(-1)
	select {
	case a.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (a *admission) release() { <-a.slots }
