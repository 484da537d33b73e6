package push

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// OutcomeKind is what a provider's answer means for the batch
// (style §4.5; reference-behaviour §6).
type OutcomeKind uint8

// The outcome kinds. The zero value is not a valid kind.
const (
	// Sent means the provider accepted the message.
	Sent OutcomeKind = iota + 1
	// Dead means the token will never work again: mark the device dead.
	Dead
	// Retry means try again later, no sooner than RetryAfter.
	Retry
	// Terminal means give up on this batch; the device stays alive.
	Terminal
)

// String returns the kind's lower-case name, as counters and logs write it.
func (k OutcomeKind) String() string {
	switch k {
	case Sent:
		return "sent"
	case Dead:
		return "dead"
	case Retry:
		return "retry"
	case Terminal:
		return "terminal"
	}
	return "OutcomeKind(" + strconv.Itoa(int(k)) + ")"
}

// Reasons shared by both providers. Provider-specific reasons are the
// provider's own codes (APNs "Unregistered", FCM "UNREGISTERED", ...).
const (
	// ReasonExpired: the deadline had passed before the request was made.
	ReasonExpired = "expired"
	// ReasonTransport: the request failed below HTTP (reset, refused, or a
	// deadline on a provider without its own timeout reason).
	ReasonTransport = "transport"
	// ReasonUnknown: the provider's error named no reason.
	ReasonUnknown = "unknown"
	// ReasonUnparseable: the provider's error body was not JSON.
	ReasonUnparseable = "unparseable"
)

// Outcome is a provider's answer to one request. Reason is a short code,
// never payload text; RetryAfter is the provider's minimum delay for a Retry
// (0 when it named none).
type Outcome struct {
	Kind       OutcomeKind
	Reason     string
	RetryAfter time.Duration
}

// ParseRetryAfter reads a Retry-After header value: a number of seconds, or
// an HTTP date taken relative to now and clamped at zero. It reports false
// for an empty or unparseable value, which is then ignored
// (reference-behaviour §7.2).
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(s) || s < 0 {
			return 0, false
		}
		if s >= float64(math.MaxInt64)/float64(time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
