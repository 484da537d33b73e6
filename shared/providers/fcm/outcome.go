package fcm

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
)

// FCM's codes that decide an outcome (reference-behaviour §6).
const (
	codeUnregistered    = "UNREGISTERED"
	codeInvalidArgument = "INVALID_ARGUMENT"
)

// errorBody is FCM's v1 error shape.
type errorBody struct {
	Error struct {
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			ErrorCode string `json:"errorCode"`
		} `json:"details"`
	} `json:"error"`
}

// outcome maps one send, classified from the exchange the transport
// recorded before the SDK's error could be wrapped (style §4.4): the SDK
// reports a cancelled context, not FCM's answer, once the single attempt
// is over.
func (c *Client) outcome(err error, a *attempt) push.Outcome {
	switch {
	case a.expired:
		return push.Outcome{Kind: push.Terminal, Reason: push.ReasonExpired}
	case a.status != 0:
		return c.byStatus(a)
	case err == nil:
		return push.Outcome{Kind: push.Sent}
	case !a.tried:
		return push.Outcome{Kind: push.Terminal, Reason: ReasonInvalidMessage}
	}
	// No answer: a network error, a timeout, or no access token.
	return push.Outcome{Kind: push.Retry, Reason: push.ReasonTransport, RetryAfter: contract.FCMRetryMin}
}

// byStatus maps FCM's answer (reference-behaviour §6, §7.2): 2xx sent;
// UNREGISTERED, or INVALID_ARGUMENT whose message mentions the token, dead;
// 429 retry no sooner than FCMRateLimitedRetryMin and 5xx no sooner than
// FCMRetryMin, or Retry-After when longer; anything else terminal, with
// FCM's status string as the reason.
func (c *Client) byStatus(a *attempt) push.Outcome {
	if a.status >= http.StatusOK && a.status < http.StatusMultipleChoices {
		return push.Outcome{Kind: push.Sent}
	}
	var e errorBody
	reason := push.ReasonUnparseable
	if json.Unmarshal(a.body, &e) == nil {
		reason = e.Error.Status
		if reason == "" {
			reason = push.ReasonUnknown
		}
	}
	unregistered := e.Error.Status == codeUnregistered
	for _, d := range e.Error.Details {
		unregistered = unregistered || d.ErrorCode == codeUnregistered
	}
	switch {
	case unregistered:
		return push.Outcome{Kind: push.Dead, Reason: codeUnregistered}
	case e.Error.Status == codeInvalidArgument && strings.Contains(strings.ToLower(e.Error.Message), "token"):
		return push.Outcome{Kind: push.Dead, Reason: codeInvalidArgument}
	case a.status == http.StatusTooManyRequests:
		return push.Outcome{Kind: push.Retry, Reason: reason, RetryAfter: c.retryAfter(a, contract.FCMRateLimitedRetryMin)}
	case a.status >= http.StatusInternalServerError:
		return push.Outcome{Kind: push.Retry, Reason: reason, RetryAfter: c.retryAfter(a, contract.FCMRetryMin)}
	}
	return push.Outcome{Kind: push.Terminal, Reason: reason}
}

// retryAfter is FCM's Retry-After, or min when that is shorter or absent.
func (c *Client) retryAfter(a *attempt, min time.Duration) time.Duration {
	d, _ := push.ParseRetryAfter(a.header.Get("Retry-After"), c.clock.Now())
	return max(d, min)
}
