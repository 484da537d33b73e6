package contract

import "net/http"

// Error is an outcome the contract answers with an HTTP status and a JSON body
// {"error": Code}. It deliberately has no message, so nothing private can
// leak into a response.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the body's error string (reference-behaviour §2.1).
	Code string
	// RetryAfter, when positive, is sent as the Retry-After header in seconds.
	RetryAfter int
}

// Error returns the code.
func (e *Error) Error() string { return "contract: " + e.Code }

// The errors of reference-behaviour §2.1, one value per code. Callers test
// them with errors.Is.
var (
	ErrInvalidRequest        = &Error{Status: http.StatusBadRequest, Code: "invalid_request"}
	ErrInvalidToken          = &Error{Status: http.StatusUnauthorized, Code: "invalid_token"}
	ErrSessionExpired        = &Error{Status: http.StatusUnauthorized, Code: "session_expired"}
	ErrInvalidChallenge      = &Error{Status: http.StatusUnauthorized, Code: "invalid_challenge"}
	ErrInvalidProof          = &Error{Status: http.StatusUnauthorized, Code: "invalid_proof"}
	ErrNotFound              = &Error{Status: http.StatusNotFound, Code: "not_found"}
	ErrTooManyDevices        = &Error{Status: http.StatusConflict, Code: "too_many_devices"}
	ErrRequestTooLarge       = &Error{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large"}
	ErrRateLimited           = &Error{Status: http.StatusTooManyRequests, Code: "rate_limited"}
	ErrInternal              = &Error{Status: http.StatusInternalServerError, Code: "internal"}
	ErrBusy                  = &Error{Status: http.StatusServiceUnavailable, Code: "busy", RetryAfter: BusyRetryAfterSeconds}
	ErrDependencyUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: "dependency_unavailable", RetryAfter: UnavailableRetryAfterSeconds}
	ErrShuttingDown          = &Error{Status: http.StatusServiceUnavailable, Code: "shutting_down"}
)

// ErrMethodNotAllowed is a known path asked with a method it does not serve:
// 405 with the Allow header. The original gateway answered Hono's plain-text
// 404 there (reference-behaviour §1.2); we answer every miss, unknown route
// and wrong method alike, in the JSON error shape (issue 11), and so need a
// code the reference never had.
var ErrMethodNotAllowed = &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed"}
