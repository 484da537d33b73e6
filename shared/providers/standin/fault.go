package standin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// Fault makes a stand-in answer matching requests with an error instead of
// success (design.md, POST /_emulator/faults). A request is first checked as
// the real provider would check it; only one that would succeed meets a
// fault.
type Fault struct {
	Provider Provider `json:"provider"`
	// Token is the device token to match, or "*" for every token.
	Token string `json:"token"`
	// Status is the HTTP status to answer. It may be 0 with Hang or Reset.
	Status int `json:"status"`
	// Reason is the APNs reason, or the FCM error code.
	Reason string `json:"reason"`
	// RetryAfter, when set, is sent verbatim as the Retry-After header.
	RetryAfter string `json:"retryAfter,omitempty"`
	// Times is how many requests the fault answers; 0 means 1.
	Times int `json:"times,omitempty"`
	// Message is FCM's error.message; empty means Reason.
	Message string `json:"message,omitempty"`
	// Hang holds the request unanswered until the client gives up or the
	// stand-in closes: a provider timeout.
	Hang bool `json:"hang,omitempty"`
	// Reset aborts the request without an answer: an HTTP/2 stream reset
	// for APNs, a closed connection for FCM.
	Reset bool `json:"reset,omitempty"`
}

// AddFault queues f behind the faults already added.
func (s *Server) AddFault(f Fault) error {
	if f.Provider != APNS && f.Provider != FCM {
		return fmt.Errorf("%w: unknown provider", ErrBadFault)
	}
	if !f.Hang && !f.Reset && (f.Status < 100 || f.Status > 599) {
		return fmt.Errorf("%w: status out of range", ErrBadFault)
	}
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
	return nil
}

// ClearFaults drops every queued fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// ClearFaultsFor drops the faults armed for token (not those for "*").
func (s *Server) ClearFaultsFor(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = slices.DeleteFunc(s.faults, func(f Fault) bool { return f.Token == token })
}

// takeFaultLocked returns the oldest fault for p matching token with times
// left, counting it down; s.mu must be held.
func (s *Server) takeFaultLocked(p Provider, token string) (Fault, bool) {
	for i := range s.faults {
		f := &s.faults[i]
		if f.Provider != p || (f.Token != "*" && f.Token != token) {
			continue
		}
		taken := *f
		f.Times--
		if f.Times == 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return taken, true
	}
	return Fault{}, false
}

// answerFault writes f's answer: the status, Retry-After verbatim, and the
// provider's error body. A hang or reset writes nothing.
func (s *Server) answerFault(w http.ResponseWriter, r *http.Request, f Fault) {
	switch {
	case f.Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	case f.Reset:
		panic(http.ErrAbortHandler) // resets the stream, or closes the connection
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Provider == APNS {
		writeJSON(w, f.Status, map[string]string{"reason": f.Reason})
		return
	}
	msg := f.Message
	if msg == "" {
		msg = f.Reason
	}
	writeFCMError(w, f.Status, f.Reason, msg)
}

// faultStatus is what the inbox records for f.
func faultStatus(f Fault) int {
	if f.Hang || f.Reset {
		return 0
	}
	return f.Status
}

// writeJSON answers status with v's JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // maps and structs of strings always encode
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// faultReason is the reason the inbox records for f.
func faultReason(f Fault) string {
	switch {
	case f.Hang:
		return "hang"
	case f.Reset:
		return "reset"
	}
	return f.Reason
}
