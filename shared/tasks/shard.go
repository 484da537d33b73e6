package tasks

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
)

// MaxQueues bounds the delivery queues a gateway spreads its tasks over: 32
// queues of 500 dispatches a second each are far past what one Cloud SQL
// instance serves.
const MaxQueues = 32

// Shard returns which of n queues (n ≥ 1) carries the tasks of
// registrationID: the jump consistent hash (Lamping and Veach, "A Fast,
// Minimal Memory, Consistent Hash Algorithm", 2014) of the id's 64-bit
// FNV-1a. It is stable across processes and releases, so every task of one
// registration goes to one queue while n stays the same; and when n grows to
// n+1 only about 1/(n+1) of the registrations move, each to the new queue
// (when it shrinks, only those of the queue removed move), where a modulo
// moved about n/(n+1) of them (issue 31 §4).
func Shard(registrationID string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(registrationID))
	return jump(h.Sum64(), n)
}

// jump is the jump consistent hash of key over n buckets, as the paper
// gives it: a linear congruential step (its constant is the paper's) picks
// the next bucket key would jump to, until it passes n.
func jump(key uint64, n int) int {
	b, j := int64(-1), int64(0)
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// ParseQueues splits ORCA_PUSH_TASKS_QUEUE, one queue name or several
// separated by commas, into names, spaces around each trimmed. An empty
// value has no queue.
func ParseQueues(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	qs := strings.Split(s, ",")
	for i, q := range qs {
		qs[i] = strings.TrimSpace(q)
	}
	return qs
}

// CheckQueues reports whether qs is a usable list of delivery queues: 1 to
// [MaxQueues] full names (projects/P/locations/L/queues/Q), none twice.
func CheckQueues(qs []string) error {
	if len(qs) == 0 || len(qs) > MaxQueues {
		return fmt.Errorf("need 1 to %d queues, have %d", MaxQueues, len(qs))
	}
	seen := make(map[string]bool, len(qs))
	var errs []error
	for _, q := range qs {
		switch {
		case !queuePattern.MatchString(q):
			errs = append(errs, fmt.Errorf("queue %q is not projects/P/locations/L/queues/Q", q))
		case seen[q]:
			errs = append(errs, fmt.Errorf("queue %q is named twice", q))
		}
		seen[q] = true
	}
	return errors.Join(errs...)
}
