package standin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"onorca.dev/push/shared/contract"
)

// Provider names a stand-in.
type Provider string

// The stand-ins, as the inbox and faults name them.
const (
	APNS Provider = "apns"
	FCM  Provider = "fcm"
)

// The hosts the real providers would see (design.md, "The emulator").
const (
	HostAPNSProduction = "api.push.apple.com"
	HostAPNSSandbox    = "api.sandbox.push.apple.com"
	HostFCM            = "fcm.googleapis.com"
)

// Delivery is one request a stand-in received, as /_emulator/inbox shows it.
type Delivery struct {
	Provider Provider `json:"provider"`
	// Status is what the stand-in answered: 200 when accepted, 0 when an
	// injected hang or reset left the request unanswered.
	Status int `json:"status"`
	// ReceivedAt is the shared clock's reading in epoch milliseconds.
	ReceivedAt int64  `json:"receivedAt"`
	Method     string `json:"method"`
	// Path has no query string.
	Path string `json:"path"`
	// Host is the real provider's host name, not the stand-in's address.
	Host string `json:"host"`
	// Headers holds lower-case names and their values joined by ", ", with
	// no HTTP/2 pseudo-headers.
	Headers map[string]string `json:"headers"`
	// Body is the request's JSON as received, or null when it was not JSON:
	// a data-only FCM message is there as sent, so a console can draw its
	// banner from message.data's title and message.
	Body json.RawMessage `json:"body"`
	// Reason is the injected fault's reason ("hang" or "reset" for those),
	// empty when no fault answered, so a failed delivery can be shown with
	// the words the provider would have used.
	Reason string `json:"reason,omitempty"`
	// Sealed is derived, not received: it reports whether the body carries
	// a sealed paneKey (APNs orca.paneKey, FCM message.data.paneKey;
	// contract.SealedPaneKey), whose title is only a placeholder the phone
	// replaces with what it opens. Omitted when false.
	Sealed bool `json:"sealed,omitempty"`
}

// Inbox returns every recorded request in arrival order.
func (s *Server) Inbox() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.inbox...)
}

// ClearInbox forgets every recorded request.
func (s *Server) ClearInbox() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inbox = nil
}

// recordLocked appends d; s.mu must be held. Past InboxLimit the oldest
// half is dropped.
func (s *Server) recordLocked(d Delivery) {
	if s.inboxLimit > 0 && len(s.inbox) >= 2*s.inboxLimit {
		s.inbox = append([]Delivery(nil), s.inbox[len(s.inbox)-s.inboxLimit:]...)
	}
	s.inbox = append(s.inbox, d)
}

// record puts d in the inbox with the status it is answered with: status,
// unless a request that passed the checks (200) meets a fault armed for its
// provider and token, which it takes and returns.
func (s *Server) record(d Delivery, token string, status int) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, faulted := Fault{}, false
	if status == http.StatusOK {
		f, faulted = s.takeFaultLocked(d.Provider, token)
	}
	d.Status = status
	if faulted {
		d.Status, d.Reason = faultStatus(f), faultReason(f)
	}
	s.recordLocked(d)
	return f, faulted
}

// newDelivery starts an inbox entry for r, whose body was read as body.
func (s *Server) newDelivery(p Provider, host string, r *http.Request, body []byte) Delivery {
	h := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		h[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	d := Delivery{
		Provider:   p,
		ReceivedAt: s.clock.Now().UnixMilli(),
		Method:     r.Method,
		Path:       r.URL.Path,
		Host:       host,
		Headers:    h,
	}
	if json.Valid(body) {
		d.Body = json.RawMessage(body)
		d.Sealed = sealedBody(p, body)
	}
	return d
}

// sealedBody reports whether body, a request to provider p, carries a
// sealed paneKey where that provider's payload puts it. Most bodies hold no
// paneKey at all and are not parsed again.
func sealedBody(p Provider, body []byte) bool {
	if !bytes.Contains(body, []byte(`"paneKey"`)) {
		return false
	}
	type paneKey struct {
		PaneKey string `json:"paneKey"`
	}
	var b struct {
		Orca    paneKey `json:"orca"`
		Message struct {
			Data paneKey `json:"data"`
		} `json:"message"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	if p == APNS {
		return contract.SealedPaneKey(b.Orca.PaneKey)
	}
	return contract.SealedPaneKey(b.Message.Data.PaneKey)
}
