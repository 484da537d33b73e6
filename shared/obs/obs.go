// Package obs keeps the gateway's aggregate counters and writes them as one
// structured INFO line in each minute that changed one. It is the only way anything about traffic is
// logged: never a token, title, body, or more than LoggedFingerprintChars
// characters of a fingerprint.
package obs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"onorca.dev/push/shared/contract"
)

// Counter names (reference-behaviour §9).
const (
	IPRateLimited = "ip_rate_limited"
	RequestError  = "request_error"
	// RequestCanceled counts requests that failed because their client went
	// away; they are not logged as failures.
	RequestCanceled   = "request_canceled"
	ChallengeIssued   = "challenge_issued"
	ChallengeRejected = "challenge_rejected"
	SessionIssued     = "session_issued"
	SessionRejected   = "session_rejected"
	DeviceRegistered  = "device_registered"
	DeviceRejected    = "device_rejected"
	DeviceDeleted     = "device_deleted"
	SendQueued        = "send_queued"
	SendDead          = "send_dead"
	SendRateLimited   = "send_rate_limited"
	SendError         = "send_error"
	DeliverySent      = "delivery_sent"
	DeliveryDead      = "delivery_dead"
	DeliveryError     = "delivery_error"
	DeliveryRetry     = "delivery_retry"
	DeliveryExpired   = "delivery_expired"
	ScheduleFailed    = "schedule_failed"
	SweepRescheduled  = "sweep_rescheduled"
	// DatabaseBusy and DatabaseUnavailable count requests answered 503
	// because the database could not serve them in time or could not be
	// reached.
	DatabaseBusy        = "database_busy"
	DatabaseUnavailable = "database_unavailable"
	// SharedTxMembers counts the sends, claims and outcomes that went in a
	// transaction shared with others (group commit, store.SharedHostTx);
	// SharedTxFailed those of them whose shared transaction failed, so
	// that each ran again alone.
	SharedTxMembers = "shared_tx_members"
	SharedTxFailed  = "shared_tx_failed"
	// DeliveryDropped counts batches that ended without a provider call
	// because their registration was deleted while they were in flight.
	DeliveryDropped = "delivery_dropped"
	// ReceiptsRead counts the events POST /v1/receipts answered.
	ReceiptsRead = "receipts_read"
	// InstanceRateLimited counts challenge and session requests refused 429
	// by the instance's global bucket, which floods from many addresses
	// reach when the per-IP one does not (issue 26 §2).
	InstanceRateLimited = "instance_rate_limited"
)

// Counters is a set of named aggregate counters, safe for concurrent use.
type Counters struct {
	log *slog.Logger
	// mu guards n.
	mu sync.Mutex
	n  map[string]int64
}

// NewCounters returns empty counters that Flush writes to log.
func NewCounters(log *slog.Logger) *Counters {
	return &Counters{log: log, n: make(map[string]int64)}
}

// Add adds delta to the counter name.
func (c *Counters) Add(name string, delta int64) {
	c.mu.Lock()
	c.n[name] += delta
	c.mu.Unlock()
}

// Inc adds one to the counter name.
func (c *Counters) Inc(name string) { c.Add(name, 1) }

// Consume returns every counter and resets them.
func (c *Counters) Consume() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = make(map[string]int64)
	return out
}

// Flush writes the non-zero counters as one INFO line
// {"msg":"orca_push_counters", ...} and resets them; it writes nothing when
// nothing changed since the last flush, so an idle process is silent even
// though the idle sweep adds zeros.
func (c *Counters) Flush() {
	n := c.Consume()
	attrs := make([]any, 0, 2*len(n))
	for _, k := range slices.Sorted(maps.Keys(n)) {
		if n[k] != 0 {
			attrs = append(attrs, slog.Int64(k, n[k]))
		}
	}
	if len(attrs) == 0 {
		return
	}
	c.log.Info("orca_push_counters", attrs...)
}

// Run flushes every interval until ctx ends, then flushes once more. The
// interval is real time: it paces log lines, it decides nothing.
func (c *Counters) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.Flush()
			return
		case <-t.C:
			c.Flush()
		}
	}
}

// Host returns the part of a host fingerprint a log line may hold: its first
// LoggedFingerprintChars characters.
func Host(fingerprint string) string {
	if len(fingerprint) > contract.LoggedFingerprintChars {
		return fingerprint[:contract.LoggedFingerprintChars]
	}
	return fingerprint
}

// ErrorType returns the type name of the innermost error wrapped in err (for
// example *pgconn.PgError), the only thing about an unexpected error that is
// logged: an error's text may hold SQL, a token or a provider's words.
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
				next = j.Unwrap()[0]
			}
		}
		if next == nil {
			return fmt.Sprintf("%T", err)
		}
		err = next
	}
}
