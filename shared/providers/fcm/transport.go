package fcm

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
)

// maxResponse bounds what is read of one FCM answer.
const maxResponse = 64 << 10

// attemptKey is the context key of a send's *attempt.
type attemptKey struct{}

// attempt is one send's single HTTP exchange, as the transports saw it.
// Both transports run in the goroutine of the SDK call, so Send reads it
// after that call without a lock.
type attempt struct {
	deadline int64
	stop     context.CancelFunc

	tried   bool
	expired bool
	status  int
	header  http.Header
	body    []byte
}

// begin returns the send's context: bounded by contract.ProviderTimeout,
// carrying a, and cancelled by the transport once the first attempt is over.
func (a *attempt) begin(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, a.stop = context.WithTimeout(context.WithValue(ctx, attemptKey{}, a), contract.ProviderTimeout)
	return ctx, a.stop
}

// singleAttempt records the first attempt of a send and then cancels the
// send's context. The SDK checks the context before each retry, so it gives
// up at once instead of retrying a 503 or a network error in-process for
// seconds (go-dependencies §2d); the caller schedules the retry. The answer
// is read here in full, so its status, Retry-After and error body are
// known even when the SDK reports only the cancelled context.
type singleAttempt struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *singleAttempt) RoundTrip(req *http.Request) (*http.Response, error) {
	a, ok := req.Context().Value(attemptKey{}).(*attempt)
	if !ok {
		return t.base.RoundTrip(req)
	}
	if a.tried {
		return nil, context.Canceled // unreachable: the SDK saw the cancelled context
	}
	a.tried = true
	defer a.stop()
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	a.status, a.header, a.body = resp.StatusCode, resp.Header, body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// expiryCheck fails a request, unsent, whose send's deadline has passed by
// the injected clock: it runs after the access token was fetched.
type expiryCheck struct {
	base  http.RoundTripper
	clock clock.Clock
}

// RoundTrip implements http.RoundTripper.
func (t *expiryCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	if a, ok := req.Context().Value(attemptKey{}).(*attempt); ok && clock.Millis(t.clock) >= a.deadline {
		a.expired = true
		return nil, errExpired
	}
	return t.base.RoundTrip(req)
}
