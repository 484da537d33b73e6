package apns

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/sideshow/apns2"

	"onorca.dev/push/shared/push"
)

// deadReasons are the 400 reasons that retire a token (contract, "Provider
// payloads"; reference-behaviour §6). 410 is dead whatever its reason.
var deadReasons = map[string]bool{
	apns2.ReasonBadDeviceToken:         true,
	apns2.ReasonUnregistered:           true,
	apns2.ReasonDeviceTokenNotForTopic: true,
}

// outcome maps apns2's result, classified before anything wraps err
// (style §4.4): 200 sent; 410, or 400 with a dead reason, dead; 429 and
// 5xx retry, with Retry-After when APNs sent one; other statuses terminal;
// no answer at all retry (reference-behaviour §7.1).
func (c *Client) outcome(res *apns2.Response, err error, ex *exchange) push.Outcome {
	var status int
	var reason string
	switch {
	case err == nil:
		status, reason = res.StatusCode, res.Reason
	case ex.status != 0:
		// APNs answered, but apns2 could not decode the body.
		status, reason = ex.status, push.ReasonUnparseable
	case isTimeout(err):
		return push.Outcome{Kind: push.Retry, Reason: ReasonTimeout}
	default:
		return push.Outcome{Kind: push.Retry, Reason: push.ReasonTransport}
	}
	if status == http.StatusOK {
		return push.Outcome{Kind: push.Sent}
	}
	if reason == "" {
		reason = push.ReasonUnknown
	}
	switch {
	case status == http.StatusGone, status == http.StatusBadRequest && deadReasons[reason]:
		return push.Outcome{Kind: push.Dead, Reason: reason}
	case status == http.StatusTooManyRequests, status >= http.StatusInternalServerError:
		o := push.Outcome{Kind: push.Retry, Reason: reason}
		o.RetryAfter, _ = push.ParseRetryAfter(ex.retryAfter, c.clock.Now())
		return o
	}
	return push.Outcome{Kind: push.Terminal, Reason: reason}
}

// isTimeout reports whether err is a deadline: the request's own or the
// network's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
