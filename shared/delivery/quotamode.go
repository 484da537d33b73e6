package delivery

import (
	"sync"

	"onorca.dev/push/shared/store"
)

// maxQuotaModes bounds the hosts whose quota mode an Admission remembers.
// Only hosts that do not count are remembered (busy ones, a few), and
// forgetting one costs its next send one statement more.
const maxQuotaModes = 1 << 14

// quotaModes remembers, per host, how its next alert's quota is cheapest
// decided (store.QuotaMode): what the host's last send on this instance
// found. It is a hint: a wrong one costs a statement, never a wrong answer.
type quotaModes struct {
	mu sync.Mutex
	m  map[string]store.QuotaMode
}

// get returns host's mode, QuotaCount when none is remembered.
func (q *quotaModes) get(host string) store.QuotaMode {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.m[host]
}

// set remembers host's mode; QuotaCount forgets it.
func (q *quotaModes) set(host string, mode store.QuotaMode) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if mode == store.QuotaCount {
		delete(q.m, host)
		return
	}
	if q.m == nil || len(q.m) >= maxQuotaModes {
		q.m = make(map[string]store.QuotaMode)
	}
	q.m[host] = mode
}
