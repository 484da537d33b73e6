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
// registrationID: FNV-1a of the id, modulo n. It is stable across processes
// and releases, so every task of one registration goes to one queue while n
// stays the same.
func Shard(registrationID string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(registrationID))
	return int(h.Sum32() % uint32(n))
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
