// Package obs keeps the gateway's aggregate counters and writes them as
// structured INFO lines, from the requests that count them (at most one line
// every UrgentEvery after a failure the alerts watch, one every RoutineEvery
// otherwise). It is the only way anything about traffic is
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
	// SweepCutOff counts the sessions the sweep ended for waiting in a
	// transaction for their client too long (store.CutOffSilent): a
	// gateway cut off from the database mid-transaction.
	SweepCutOff = "sweep_cut_off"
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
	// DeliveryLate1s, DeliveryLate5s, DeliveryLate30s and
	// DeliveryLateOver30s count the provider calls of batches by how late
	// they went out after the time they were due (each attempt's own):
	// within 1 s, 5 s, 30 s, or later ([DeliveryLate]).
	DeliveryLate1s      = "delivery_late_1s"
	DeliveryLate5s      = "delivery_late_5s"
	DeliveryLate30s     = "delivery_late_30s"
	DeliveryLateOver30s = "delivery_late_over_30s"
	// AlertLatency1s, AlertLatency5s, AlertLatency30s and
	// AlertLatencyOver30s count the alert batches a provider accepted by
	// how long after the acceptance of their oldest alert: the coalescing
	// window, the queue and the retries included ([AlertLatency]).
	AlertLatency1s      = "alert_latency_1s"
	AlertLatency5s      = "alert_latency_5s"
	AlertLatency30s     = "alert_latency_30s"
	AlertLatencyOver30s = "alert_latency_over_30s"
	// APNSCredentialsRejected and FCMCredentialsRejected count the
	// provider calls refused for the gateway's own credentials (APNs 403
	// with a provider-token or certificate reason, FCM 401 or 403), not
	// for the device's.
	APNSCredentialsRejected = "apns_credentials_rejected"
	FCMCredentialsRejected  = "fcm_credentials_rejected"
	// InstanceRateLimited counts challenge and session requests refused 429
	// by the instance's global bucket, which floods from many addresses
	// reach when the per-IP one does not (issue 26 §2).
	InstanceRateLimited = "instance_rate_limited"
	// PayloadUnopenable counts the batches that ended expired, reason
	// payload_key_unknown: a member did not authenticate under the key of
	// the ring (ORCA_PUSH_PAYLOAD_KEYS) that its id names, or no instance
	// that held its key claimed it before its deadline.
	PayloadUnopenable = "payload_unopenable"
	// PayloadKeyNotHeld counts the claims that left a batch for another
	// instance because their ring lacks the key it was sealed with: normal
	// for a while during a rotation's rollout, never once it has settled.
	PayloadKeyNotHeld = "payload_key_not_held"
)

// DeliveryLate returns the counter of a provider call made late after its
// batch was due.
func DeliveryLate(late time.Duration) string {
	return bucket(late, DeliveryLate1s, DeliveryLate5s, DeliveryLate30s, DeliveryLateOver30s)
}

// AlertLatency returns the counter of an alert batch a provider accepted
// took after its oldest alert was accepted.
func AlertLatency(took time.Duration) string {
	return bucket(took, AlertLatency1s, AlertLatency5s, AlertLatency30s, AlertLatencyOver30s)
}

// bucket returns the name of d's bucket: at most 1 s, 5 s, 30 s, or more.
func bucket(d time.Duration, le1s, le5s, le30s, over string) string {
	switch {
	case d <= time.Second:
		return le1s
	case d <= 5*time.Second:
		return le5s
	case d <= 30*time.Second:
		return le30s
	}
	return over
}

// How often an instance writes its counters line (issue 31 §1). Cloud Run
// gives an instance with request-based billing no CPU between requests, so
// the line is written by the requests themselves ([Counters.WriteDue]), before
// their answer: at most one line every UrgentEvery while an urgent counter
// rose, which keeps the alerts' 5- and 10-minute windows (infra/alerts.tf)
// fed within seconds of the failure, and otherwise at most one every
// RoutineEvery, which bounds log volume (infra/README.md, "Capacity and
// cost"). The ticker of [Counters.Run] is only a fallback for an instance
// that gets CPU between requests, and the shutdown flush the last line.
const (
	UrgentEvery  = 2 * time.Second
	RoutineEvery = time.Minute
)

// urgent are the counters of the failures the alert policies watch
// (infra/alerts.tf): a line carrying one of them goes out at the next answer
// once UrgentEvery has passed since the last line.
var urgent = map[string]bool{
	DeliveryError: true, DeliveryDead: true, DeliveryExpired: true,
	APNSCredentialsRejected: true, FCMCredentialsRejected: true,
	DatabaseBusy: true, DatabaseUnavailable: true,
	PayloadUnopenable: true, SweepRescheduled: true,
}

// Urgent reports whether the counter name goes out within UrgentEvery of
// the answer that counted it rather than within RoutineEvery.
func Urgent(name string) bool { return urgent[name] }

// Counters is a set of named aggregate counters, safe for concurrent use.
type Counters struct {
	log *slog.Logger
	// mu guards the fields below.
	mu sync.Mutex
	// n is every counter since the last Consume, whatever was written.
	n map[string]int64
	// total is every counter since the counters were made.
	total map[string]int64
	// unwritten is every counter since the last line, and changed and
	// urgentChanged whether one of them, or an urgent one, is not zero.
	unwritten     map[string]int64
	changed       bool
	urgentChanged bool
	// lastLine and lastUrgent are when WriteDue last wrote a line, and one
	// that carried an urgent counter (zero: never).
	lastLine, lastUrgent time.Time
}

// NewCounters returns empty counters that Flush and WriteDue write to log.
func NewCounters(log *slog.Logger) *Counters {
	return &Counters{log: log, n: make(map[string]int64), total: make(map[string]int64),
		unwritten: make(map[string]int64)}
}

// Add adds delta to the counter name.
func (c *Counters) Add(name string, delta int64) {
	c.mu.Lock()
	c.n[name] += delta
	c.total[name] += delta
	c.unwritten[name] += delta
	if delta != 0 {
		c.changed = true
		c.urgentChanged = c.urgentChanged || urgent[name]
	}
	c.mu.Unlock()
}

// Totals returns every counter's sum since the counters were made, whatever
// was flushed: what the emulator's console shows.
func (c *Counters) Totals() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.total)
}

// Inc adds one to the counter name.
func (c *Counters) Inc(name string) { c.Add(name, 1) }

// Consume returns every counter added since the last Consume and resets
// them; the lines written are their own business (tests and tools read
// counts this way).
func (c *Counters) Consume() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = make(map[string]int64)
	return out
}

// takeUnwrittenLocked returns what no line carried yet and resets it; c.mu
// must be held.
func (c *Counters) takeUnwrittenLocked() map[string]int64 {
	out := c.unwritten
	c.unwritten = make(map[string]int64)
	c.changed, c.urgentChanged = false, false
	return out
}

// Flush writes the non-zero counters no line carried yet as one INFO line
// {"msg":"orca_push_counters", ...}; it writes nothing when nothing changed
// since the last line, so an idle process is silent even though the idle
// sweep adds zeros. It is the ticker's and the shutdown's write.
func (c *Counters) Flush() {
	c.mu.Lock()
	n := c.takeUnwrittenLocked()
	c.mu.Unlock()
	c.write(n)
}

// WriteDue writes the counters line, as Flush does, when one is due at now:
// an urgent counter changed and UrgentEvery has passed since the last line
// that carried one, or another changed and RoutineEvery has passed since the
// last line. The HTTP edge calls it before each answer's first byte, so a
// failure a request counted is on stdout before its answer. It reports
// whether it wrote. now paces lines, it decides nothing else; a clock set
// back makes a line due.
func (c *Counters) WriteDue(now time.Time) bool {
	c.mu.Lock()
	due := c.changed && (elapsed(c.lastLine, now, RoutineEvery) || c.urgentChanged && elapsed(c.lastUrgent, now, UrgentEvery))
	if !due {
		c.mu.Unlock()
		return false
	}
	if c.urgentChanged {
		c.lastUrgent = now
	}
	c.lastLine = now
	n := c.takeUnwrittenLocked()
	c.mu.Unlock()
	c.write(n)
	return true
}

// elapsed reports whether every has passed from last to now, or now is
// before last (a clock set back).
func elapsed(last, now time.Time, every time.Duration) bool {
	since := now.Sub(last)
	return since < 0 || since >= every
}

// write logs the non-zero counters of n as one line, or nothing.
func (c *Counters) write(n map[string]int64) {
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

// Run flushes every interval until ctx ends, then flushes once more. It is a
// fallback: on Cloud Run an idle instance has no CPU for it, and the
// requests write the lines ([Counters.WriteDue]). The interval is real
// time: it paces log lines, it decides nothing.
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
