package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
)

// event is one /v1/send's notification as admission handles it for every
// registration of the request.
type event struct {
	host string
	n    *contract.Notification
	kind contract.Kind
	// id is the identity hash and fingerprint the keyed content digest
	// (reference-behaviour §4.1, contentDigest); former is the plain
	// content hash events kept before it, which a duplicate of an event
	// stored then still matches.
	id          string
	fingerprint string
	former      string
	// item is the notification as a batch stores it (payload_json member).
	item []byte
	// deadline is a new event's deadline (the stored one of a known event
	// comes back from the store with each recipient).
	deadline int64
}

// newEvent prepares n, sent by host, for admission at now, its content
// digested under digest.
func newEvent(host string, n *contract.Notification, now int64, digest *seal.DigestKey) *event {
	content := contentOf(n)
	return &event{
		host:        host,
		n:           n,
		kind:        n.EffectiveKind(),
		id:          eventID(host, n),
		fingerprint: contentDigest(digest, content),
		former:      sha256Hex(content),
		item:        n.AppendJSON(nil, true),
		deadline:    newDeadline(n, now),
	}
}

// sameContent reports whether an event stored with the content hash stored
// has ev's content: its keyed digest, or the plain hash of the same
// content that events kept before the digest was keyed.
func (ev *event) sameContent(stored string) bool {
	return stored == ev.fingerprint || stored == ev.former
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

// contentOf is what the content digest covers: the notification's JSON
// without sound and with the kind normalised (decisions table), so a resend
// that differs only in sound, or in an omitted versus explicit "alert", is
// the same content.
func contentOf(n *contract.Notification) []byte { return n.AppendJSON(nil, false) }

// contentDigest is the keyed digest of content (contentOf): HMAC-SHA256 hex
// under the digest key, ORCA_PUSH_DIGEST_KEY. Its key is not the payload
// ring's, so a payload-key rotation changes no digest; and the database
// never holds it, so a copy of the events cannot confirm a guessed title
// and body, which a plain SHA-256 beside the readable notification id,
// epoch and host let anyone do.
func contentDigest(digest *seal.DigestKey, content []byte) string {
	return digest.Sum(content)
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
