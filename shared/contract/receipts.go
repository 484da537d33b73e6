package contract

import "encoding/json"

// ReceiptStatus is the last state of one recipient of an event, in a
// POST /v1/receipts answer (issue "delivery receipts").
type ReceiptStatus string

// The recipient states. Queued and retrying are on the way; the others are
// final.
const (
	// ReceiptQueued: accepted, no attempt finished yet (waiting for its
	// coalescing window or its task).
	ReceiptQueued ReceiptStatus = "queued"
	// ReceiptRetrying: an attempt failed retryably and another is
	// scheduled; the reason is the provider's or the gateway's.
	ReceiptRetrying ReceiptStatus = "retrying"
	// ReceiptSent: a provider accepted the push that carried it, alone or
	// in a summary.
	ReceiptSent ReceiptStatus = "sent"
	// ReceiptDead: the provider said the token is dead.
	ReceiptDead ReceiptStatus = "dead"
	// ReceiptError: a terminal provider refusal.
	ReceiptError ReceiptStatus = "error"
	// ReceiptExpired: its deadline passed before a provider accepted it.
	ReceiptExpired ReceiptStatus = "expired"
	// ReceiptDismissed: a dismissal cancelled it before it was sent.
	ReceiptDismissed ReceiptStatus = "dismissed"
	// ReceiptDropped: its registration was deleted before it was sent.
	ReceiptDropped ReceiptStatus = "dropped"
)

// Final reports whether s is a state the recipient never leaves.
func (s ReceiptStatus) Final() bool { return s != ReceiptQueued && s != ReceiptRetrying }

// EventRef names one of the host's events: the contract's event identity
// (host, kind, epoch, seq) without the host, which is the bearer's.
type EventRef struct {
	Kind  Kind // KindAlert when omitted
	Epoch string
	Seq   int64
}

// ReceiptsRequest is the body of POST /v1/receipts.
type ReceiptsRequest struct {
	// Events holds 1..MaxReceiptEvents events in request order, repeats
	// kept: each is answered.
	Events []EventRef
}

// RecipientReceipt is what became of an event for one registration.
type RecipientReceipt struct {
	RegistrationID string        `json:"registrationId"`
	Status         ReceiptStatus `json:"status"`
	// At is when the status was reached, epoch milliseconds of the
	// gateway's clock.
	At int64 `json:"at"`
	// Reason is the provider's or the gateway's reason for retrying,
	// dead, error and expired; empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// Receipt answers one requested event.
type Receipt struct {
	Kind              Kind   `json:"kind"`
	NotificationEpoch string `json:"notificationEpoch"`
	NotificationSeq   int64  `json:"notificationSeq"`
	// Known reports whether the host has such an event in the last
	// Retention; Recipients is then every registration it was accepted
	// for, in the order they were first accepted, and empty otherwise.
	Known      bool               `json:"known"`
	Recipients []RecipientReceipt `json:"recipients"`
}

// ReceiptsResponse is the 200 answer of POST /v1/receipts: one receipt per
// requested event, in request order.
type ReceiptsResponse struct {
	Receipts []Receipt `json:"receipts"`
}

// DecodeReceiptsRequest strictly decodes a receipts request: "v": 1 and
// 1..MaxReceiptEvents events, each with an optional kind, a notificationEpoch
// (an OpaqueId) and a notificationSeq (0..MaxSafeInteger), and nothing else.
// Any failure is ErrInvalidRequest.
func DecodeReceiptsRequest(body []byte) (ReceiptsRequest, error) {
	o, err := parseTop(body)
	if err != nil {
		return ReceiptsRequest{}, err
	}
	o.version()
	raws := o.objectArray("events")
	if err := o.finish("body"); err != nil {
		return ReceiptsRequest{}, err
	}
	if len(raws) < 1 || len(raws) > MaxReceiptEvents {
		return ReceiptsRequest{}, invalid("events must hold 1..%d events", MaxReceiptEvents)
	}
	req := ReceiptsRequest{Events: make([]EventRef, len(raws))}
	for i, raw := range raws {
		e, err := readEventRef(raw)
		if err != nil {
			return ReceiptsRequest{}, err
		}
		req.Events[i] = e
	}
	return req, nil
}

// readEventRef reads one element of events.
func readEventRef(raw json.RawMessage) (EventRef, error) {
	o, err := parseObject(raw, "event")
	if err != nil {
		return EventRef{}, err
	}
	e := EventRef{Kind: KindAlert}
	if kind, ok := o.str("kind", false); ok {
		e.Kind = Kind(kind)
		if e.Kind != KindAlert && e.Kind != KindDismiss {
			o.fail(invalid("kind is unknown"))
		}
	}
	e.Epoch, _ = o.str("notificationEpoch", true)
	e.Seq, _ = o.integer("notificationSeq", true, 0)
	if err := o.finish("event"); err != nil {
		return EventRef{}, err
	}
	if !validOpaqueID(e.Epoch) {
		return EventRef{}, invalid("notificationEpoch is out of range")
	}
	return e, nil
}

// objectArray reads a required array whose elements are objects and returns
// their raw values, in place; parseObject reads each.
func (o *object) objectArray(key string) []json.RawMessage {
	raw, ok := o.take(key)
	if !ok {
		o.fail(invalid("%s is required", key))
		return nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		o.fail(invalid("%s must be an array", key))
		return nil
	}
	// raw was validated with its object, so every element is a whole JSON
	// value followed by a comma or the closing bracket.
	var out []json.RawMessage
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		return out
	}
	for {
		if i >= len(raw) || raw[i] != '{' {
			o.fail(invalid("%s must hold objects", key))
			return nil
		}
		end := skipValue(raw, i)
		if end < 0 {
			o.fail(invalid("%s must be an array", key))
			return nil
		}
		out = append(out, raw[i:end:end])
		switch i = skipSpace(raw, end); {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == ']':
			return out
		default:
			o.fail(invalid("%s must be an array", key))
			return nil
		}
	}
}
