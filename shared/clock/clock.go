// Package clock is the one source of time for orca-push. Every time-dependent
// decision (buckets, quota windows, expiries, coalescing windows, retry times)
// reads a Clock passed in through a constructor, so tests and the emulator can
// freeze and advance time. Nothing here waits on a timer.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Manual is a clock that moves only when told to. It is safe for concurrent use
// and is what the emulator's /_emulator/clock API drives.
type Manual struct {
	// mu guards now.
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a Manual clock that reads start until moved.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's current reading.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d (a negative d is ignored) and returns
// the new reading.
func (m *Manual) Advance(d time.Duration) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d > 0 {
		m.now = m.now.Add(d)
	}
	return m.now
}

// Set moves the clock to t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = t
}

// Millis returns c's reading as Unix milliseconds, the unit every stored time
// and every wire timestamp uses.
func Millis(c Clock) int64 { return c.Now().UnixMilli() }
