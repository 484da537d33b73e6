package hostclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"onorca.dev/push/shared/push"
)

// The gateway answers 503 with Retry-After when it could not take a request
// right now and wrote nothing for it: busy when the session-lookup queue is
// full (reference-behaviour §2.7, Retry-After: 1), and, by issue
// "Hardening" §4, when a host lock is held past the lock timeout (busy,
// Retry-After: 1) or the database refuses connections
// (dependency_unavailable, Retry-After: 5). The client then waits what
// Retry-After says, at most MaxRetryWait, and sends the same request again,
// up to RetryAttempts requests in all. A 503 without a Retry-After
// (shutting_down) and every other status are returned at once.
//
// Repeating a request is safe for every route the client calls, even when
// the refused attempt was in fact carried out and only its answer was lost:
//   - POST /v1/send: an event's identity is (host, kind, epoch, seq) and its
//     content fingerprint covers the whole notification but sound
//     (reference-behaviour §4.1). The retry sends the same bytes, so an event
//     the first attempt admitted is a duplicate: queued again, with no new
//     event row, recipient, batch or delivery and no quota spent (§4.2 steps
//     2, 4 and 5; §4.3 "Duplicates are never rate limited"). The one way a
//     retry can differ is an alert whose deadline passes during the wait,
//     which then answers error (§4.2 step 3), as any late duplicate does.
//   - POST /v1/devices is an upsert keyed by (host, deviceId): the repeat
//     returns the same registrationId. GET /v1/devices only reads.
//   - DELETE /v1/devices/{id}: a repeat of a delete that was applied answers
//     not_found; the registration is gone either way.
//   - POST /v1/host/challenge mints a new challenge each time; an unanswered
//     one expires. POST /v1/host/session: a refused attempt consumed nothing
//     (the 503s above come before or instead of a commit), so the proof is
//     still good unless the challenge expired during the wait, which reads
//     invalid_proof.
const (
	// RetryAttempts bounds the requests the client sends for one call's
	// request while the gateway answers 503 with Retry-After: the first and
	// two retries.
	RetryAttempts = 3
	// MaxRetryWait caps the wait before a retry, whatever Retry-After says,
	// so a call gives up within (RetryAttempts−1)×MaxRetryWait of waiting.
	MaxRetryWait = 5 * time.Second
)

// RetryError is returned, wrapped with the operation name, when the gateway
// still answered 503 with Retry-After to the last of RetryAttempts requests,
// or when ctx ended while the client waited to retry. It wraps the last
// answer and, in the second case, ctx's error, so errors.Is(err,
// contract.ErrBusy), errors.Is(err, context.Canceled) and errors.As to
// [*APIError] hold too.
type RetryError struct {
	// Attempts is how many requests were sent.
	Attempts int
	// Last is the gateway's last answer.
	Last *APIError
	// Err is ctx's error when ctx ended during a wait, else nil.
	Err error
}

// Error returns the attempts, the last answer and why the client stopped.
func (e *RetryError) Error() string {
	s := "hostclient: gave up after " + strconv.Itoa(e.Attempts) + " attempts: " + e.Last.Error()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the last answer and ctx's error, when set.
func (e *RetryError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Last, e.Err}
	}
	return []error{e.Last}
}

// unavailableError is an [*APIError] whose answer asked for a retry after
// wait. It never leaves the package: do retries it or turns it into a
// [*RetryError].
type unavailableError struct {
	api  *APIError
	wait time.Duration
}

func (e *unavailableError) Error() string { return e.api.Error() }

// refusal returns the error for a non-2xx answer: an [*unavailableError]
// for a 503 with a Retry-After the client can read, else an [*APIError].
func (c *Client) refusal(resp *http.Response, code string) error {
	api := &APIError{Status: resp.StatusCode, Code: code}
	if resp.StatusCode != http.StatusServiceUnavailable {
		return api
	}
	wait, ok := push.ParseRetryAfter(resp.Header.Get("Retry-After"), c.clock.Now())
	if !ok {
		return api
	}
	return &unavailableError{api: api, wait: min(wait, MaxRetryWait)}
}

// do sends one request as doOnce does, and again, after the wait the answer
// asked for, while the gateway answers 503 with Retry-After, up to
// RetryAttempts requests. The body is sent as the same bytes each time.
func (c *Client) do(ctx context.Context, method, path, token string, body []byte, out any) error {
	for attempt := 1; ; attempt++ {
		err := c.doOnce(ctx, method, path, token, body, out)
		var u *unavailableError
		if !errors.As(err, &u) {
			return err
		}
		if attempt == RetryAttempts {
			return &RetryError{Attempts: attempt, Last: u.api}
		}
		if err := c.wait(ctx, u.wait); err != nil {
			return &RetryError{Attempts: attempt, Last: u.api, Err: err}
		}
	}
}

// sleep waits d on a real timer, or until ctx ends. It is the default
// Options.Wait: the host waits in real time, as a desktop does.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("wait to retry: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
