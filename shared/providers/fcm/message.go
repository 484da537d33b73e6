package fcm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"firebase.google.com/go/v4/messaging"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
)

// collapseKeyChars is how much of sha256(collapseId), in hex, makes
// android.collapse_key (contract "Provider payloads"; reference-behaviour
// §5.4).
// TODO: move to contract (asked for as contract.FCMCollapseKeyChars).
const collapseKeyChars = 32

// MessageJSON returns the v1 message for m to token at now (epoch ms)
// exactly as the SDK encodes it inside {"message": ...}; an empty token is
// left out. Like all of Go's encoding/json output it escapes '<', '>', '&',
// U+2028 and U+2029.
func MessageJSON(m push.Message, token string, now int64) []byte {
	b, _ := json.Marshal(build(m, token, now)) // strings and string maps always encode
	return b
}

// Size returns the length of m's message without a token at its
// worst-case ttl, the whole contract.EventLifetime: the size the batching rule holds to
// contract.MaxProviderPayload. Any real send of m is no larger, token
// aside.
func Size(m push.Message) int {
	return len(MessageJSON(m, "", m.Deadline-contract.EventLifetime.Milliseconds()))
}

// build makes the v1 message (reference-behaviour §7.2): notification
// {title, body}; android {priority, ttl, collapse_key, notification
// {channel_id, tag}}; data holding every orca field as a string, nulls
// dropped. A dismissal is data-only: no notification, no
// android.notification, but still a collapse_key.
//
// The priority is "high": the SDK refuses "HIGH" (it accepts only "normal"
// and "high"), and FCM reads both.
func build(m push.Message, token string, now int64) *messaging.Message {
	ttl := ttlOf(m.Deadline, now)
	data := make(map[string]string, 10)
	for _, f := range m.OrcaFields() {
		if f.Type != push.FieldNull {
			data[f.Key] = f.Value
		}
	}
	msg := &messaging.Message{
		Token: token,
		Data:  data,
		Android: &messaging.AndroidConfig{
			Priority:    "high",
			TTL:         &ttl,
			CollapseKey: collapseKey(m.CollapseID),
		},
	}
	if m.Kind != contract.KindDismiss {
		channel := contract.AndroidChannel
		if m.Silent {
			channel = contract.AndroidSilentChannel
		}
		msg.Notification = &messaging.Notification{Title: m.Title, Body: m.Body}
		msg.Android.Notification = &messaging.AndroidNotification{ChannelID: channel, Tag: m.CollapseID}
	}
	return msg
}

// ttlOf is the remaining lifetime in whole seconds, rounded up, never
// negative and never over contract.EventLifetime (reference-behaviour §4.5).
func ttlOf(deadline, now int64) time.Duration {
	ms := min(max(deadline-now, 0), contract.EventLifetime.Milliseconds())
	return time.Duration((ms+999)/1000) * time.Second
}

// collapseKey is the first collapseKeyChars hex characters of
// sha256(collapseID).
func collapseKey(collapseID string) string {
	sum := sha256.Sum256([]byte(collapseID))
	return hex.EncodeToString(sum[:])[:collapseKeyChars]
}
