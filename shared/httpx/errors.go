package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
)

// HandlerFunc is a route that returns its failure instead of writing it. A
// *contract.Error becomes its status and {"error": code}; anything else is
// 500 internal, counted and logged by type only.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// WriteJSON writes v as a JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeContractError writes e as its status and body.
func writeContractError(w http.ResponseWriter, e *contract.Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	WriteJSON(w, e.Status, struct {
		Error string `json:"error"`
	}{e.Code})
}

// errorWriter turns errors into responses; Edge embeds it.
type errorWriter struct {
	counters *obs.Counters
	log      *slog.Logger
	// rejected is Options.Rejected, or a no-op.
	rejected func(route, reason string)
}

// writeError answers r with err. Only the error's type is ever logged: its
// text may hold SQL or a provider's words. A database that cannot serve now
// is 503 with Retry-After, counted, not logged: the client tries again. A
// request whose client went away failed because of that: it is counted as
// canceled, not logged as a failure.
func (ew *errorWriter) writeError(w http.ResponseWriter, r *http.Request, err error) {
	err = store.Classify(err)
	switch {
	case errors.Is(err, store.ErrBusy):
		ew.counters.Inc(obs.DatabaseBusy)
	case errors.Is(err, store.ErrUnavailable):
		ew.counters.Inc(obs.DatabaseUnavailable)
	}
	var ce *contract.Error
	if errors.As(err, &ce) {
		if ce.Status == http.StatusBadRequest {
			ew.rejected(r.Pattern, reason(err))
		}
		writeContractError(w, ce)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		ew.counters.Inc(obs.RequestCanceled)
		writeContractError(w, contract.ErrInternal)
		return
	}
	ew.counters.Inc(obs.RequestError)
	ew.log.ErrorContext(r.Context(), "orca_push_request_failed", slog.String("error", obs.ErrorType(err)))
	writeContractError(w, contract.ErrInternal)
}

// reason returns the decoder's reason for refusing a request, or "" when err
// carries none. Only [contract.InvalidError]'s reason is taken: other error
// texts are not known to be free of values.
func reason(err error) string {
	var ie *contract.InvalidError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return ""
}

// Handle adapts h to an http.Handler that writes h's error. A session that
// h's core refused is forgotten (see [Edge.AuthenticatedByCore]).
func (e *Edge) Handle(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			e.refusedByCore(r, err)
			e.writeError(w, r, err)
		}
	})
}

// ReadBody reads r's body, at most contract.MaxBodyBytes of it as streamed
// (a chunked body declares no length). A longer body is
// contract.ErrRequestTooLarge, and so at once, before a byte is read, is a
// declared Content-Length over the cap: waiting for a body that may never
// come held the connection until the read timeout (issue 26 §3).
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > contract.MaxBodyBytes {
		return nil, contract.ErrRequestTooLarge
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, contract.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, contract.ErrRequestTooLarge
	case err != nil:
		// The client went away mid-body.
		return nil, fmt.Errorf("%w: body unreadable", contract.ErrInvalidRequest)
	}
	return b, nil
}

// WriteError answers err as the edge does: a contract error as its status and
// body, anything else as 500 internal (not logged: use [Edge.Handle] for
// routes).
func WriteError(w http.ResponseWriter, err error) {
	var ce *contract.Error
	if !errors.As(err, &ce) {
		ce = contract.ErrInternal
	}
	writeContractError(w, ce)
}

// WriteEmpty answers status with no body (DELETE's 204).
func WriteEmpty(w http.ResponseWriter, status int) { w.WriteHeader(status) }
