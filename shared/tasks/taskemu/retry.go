package taskemu

import (
	"fmt"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
)

// The emulator's retry defaults are shorter than Cloud Tasks' queue defaults
// (100 attempts, 0.1 s to 3600 s, 16 doublings; queue.proto RetryConfig) so
// that a failing target gives up within minutes of emulated time.
const (
	// DefaultMinBackoff is the wait before the first retry.
	DefaultMinBackoff = time.Second
	// DefaultMaxBackoff caps the wait between retries.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultMaxDoublings is how many times the wait doubles before it grows
	// linearly, as in Cloud Tasks.
	DefaultMaxDoublings = 16
	// DefaultMaxAttempts is how many dispatches a task gets, the first one
	// included, before it is dropped.
	DefaultMaxAttempts = 20
)

// RetryConfig is the retry policy of every queue, with Cloud Tasks' meaning
// (queue.proto RetryConfig). A zero field takes its default.
type RetryConfig struct {
	// MinBackoff is the wait before the first retry.
	MinBackoff time.Duration
	// MaxBackoff caps the wait between retries.
	MaxBackoff time.Duration
	// MaxDoublings is how many times the wait doubles; after that it grows by
	// MinBackoff·2^MaxDoublings per retry until MaxBackoff.
	MaxDoublings int
	// MaxAttempts is how many dispatches a task gets, the first one included;
	// a negative value means unlimited.
	MaxAttempts int
}

// withDefaults fills zero fields and checks the result.
func (c RetryConfig) withDefaults() (RetryConfig, error) {
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxDoublings == 0 {
		c.MaxDoublings = DefaultMaxDoublings
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MinBackoff < 0 || c.MaxBackoff < c.MinBackoff || c.MaxDoublings < 0 {
		return c, fmt.Errorf("taskemu: retry config %+v: backoffs must satisfy 0 <= min <= max and doublings >= 0", c)
	}
	return c, nil
}

// forTask applies a task's own retry config over c, field by field, as
// Task.retry_config overrides the queue's.
func (c RetryConfig) forTask(rc *cloudtaskspb.RetryConfig) RetryConfig {
	if rc == nil {
		return c
	}
	if d := rc.GetMinBackoff(); d != nil {
		c.MinBackoff = d.AsDuration()
	}
	if d := rc.GetMaxBackoff(); d != nil {
		c.MaxBackoff = max(d.AsDuration(), c.MinBackoff)
	}
	if rc.GetMaxDoublings() > 0 {
		c.MaxDoublings = int(rc.GetMaxDoublings())
	}
	if rc.GetMaxAttempts() != 0 {
		c.MaxAttempts = int(rc.GetMaxAttempts())
	}
	return c
}

// exhausted reports whether a task that has been dispatched attempts times
// may not be dispatched again.
func (c RetryConfig) exhausted(attempts int) bool {
	return c.MaxAttempts > 0 && attempts >= c.MaxAttempts
}

// backoff is the wait after the failures-th failed attempt (failures >= 1).
// As in Cloud Tasks, the wait starts at MinBackoff, doubles MaxDoublings
// times, then grows linearly by the last doubled step, and never passes
// MaxBackoff: with 10 s, 300 s and 3 doublings the waits are 10, 20, 40, 80,
// 160, 240, 300, 300 s (queue.proto RetryConfig.max_doublings).
func (c RetryConfig) backoff(failures int) time.Duration {
	d := c.MinBackoff
	n := failures - 1 // intervals before this one
	for i := 0; i < n && i < c.MaxDoublings; i++ {
		if d >= c.MaxBackoff {
			return c.MaxBackoff
		}
		d *= 2
	}
	if extra := n - c.MaxDoublings; extra > 0 && d > 0 {
		if d >= c.MaxBackoff || time.Duration(extra) > (c.MaxBackoff-d)/d {
			return c.MaxBackoff
		}
		d += time.Duration(extra) * d
	}
	return min(d, c.MaxBackoff)
}
