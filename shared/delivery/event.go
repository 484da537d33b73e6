package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
)

// event is one /v1/send's notification as admission handles it for every
// registration of the request.
type event struct {
	host string
	n    *contract.Notification
	kind contract.Kind
	// id is the identity hash and fingerprint the content hash
	// (reference-behaviour §4.1).
	id          string
	fingerprint string
	// item is the notification as a batch stores it (payload_json member).
	item []byte
	// deadline is a new event's deadline (the stored one of a known event
	// comes back from the store with each recipient).
	deadline int64
}

// newEvent prepares n, sent by host, for admission at now.
func newEvent(host string, n *contract.Notification, now int64) *event {
	return &event{
		host:        host,
		n:           n,
		kind:        n.EffectiveKind(),
		id:          eventID(host, n),
		fingerprint: contentFingerprint(n),
		item:        n.AppendJSON(nil, true),
		deadline:    newDeadline(n, now),
	}
}

// eventID is the SHA-256 hex of the JSON array [host, kind, epoch, seq],
// with the kind defaulting to alert and no notificationId
// (reference-behaviour §4.1). It is written as JSON.stringify writes it, so
// ids match the original gateway's.
func eventID(host string, n *contract.Notification) string {
	return identity(host, n.EffectiveKind(), n.Epoch, n.Seq)
}

// identity is the event id of host's event (kind, epoch, seq): see eventID.
func identity(host string, kind contract.Kind, epoch string, seq int64) string {
	b := make([]byte, 0, 64+len(host)+len(epoch))
	b = append(b, '[')
	b = contract.AppendJSString(b, host)
	b = append(b, ',')
	b = contract.AppendJSString(b, string(kind))
	b = append(b, ',')
	b = contract.AppendJSString(b, epoch)
	b = append(b, ',')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, ']')
	return sha256Hex(b)
}

// contentFingerprint is the SHA-256 hex of the notification's JSON without
// sound and with the kind normalised (decisions table), so a resend that
// differs only in sound, or in an omitted versus explicit "alert", is the
// same content.
func contentFingerprint(n *contract.Notification) string {
	return sha256Hex(n.AppendJSON(nil, false))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// newDeadline is a new event's deadline: its expiresAt, capped at
// EventLifetime after this first acceptance (reference-behaviour §4.5).
func newDeadline(n *contract.Notification, now int64) int64 {
	d := now + contract.EventLifetime.Milliseconds()
	if n.ExpiresAt != 0 && n.ExpiresAt < d {
		d = n.ExpiresAt
	}
	return d
}

// fenceOf is the fence identity of an alert with a notificationId, which a
// dismissal may have fenced; nil for anything else (an alert without an id
// can never be dismissed, §4.4).
func (e *event) fenceOf() *store.Fence {
	if e.kind != contract.KindAlert || e.n.NotificationID == "" {
		return nil
	}
	return &store.Fence{Epoch: e.n.Epoch, NotificationID: e.n.NotificationID, Seq: e.n.Seq}
}
