package fcm

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
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

// MessageJSON returns the v1 message a client of the default form sends for
// m to token at now (epoch ms), exactly as the SDK encodes it inside
// {"message": ...}: the notification form, or the data-only form when m is a
// sealed alert. An empty token is left out. Like all of Go's encoding/json
// output it escapes '<', '>', '&', U+2028 and U+2029.
func MessageJSON(m push.Message, token string, now int64) []byte {
	return marshal(build(m, token, now, false))
}

// marshal is json.Marshal(msg) without its last pass: json.Marshal calls
// the SDK's MarshalJSON, which encodes with json.Marshal already, and then
// validates and compacts those bytes once more, which changes none of them
// (TestMarshalIsJSONMarshal) and was a fifth of what measuring a 27-member
// summary cost (BenchmarkJoinParts/fcm). Strings and string maps always
// encode.
func marshal(msg *messaging.Message) []byte {
	b, _ := msg.MarshalJSON()
	return b
}

// DataMessageJSON is [MessageJSON] for a client with Options.DataOnly: the
// data-only form, whatever m.
func DataMessageJSON(m push.Message, token string, now int64) []byte {
	return marshal(build(m, token, now, true))
}

// Size returns the length of m's message without a token at its
// worst-case ttl, the whole contract.EventLifetime: the size the batching rule holds to
// contract.MaxProviderPayload. Any real send of m is no larger, token
// aside, in either form: it measures the form the default client sends, and
// a message's data-only form is never larger than its notification form
// (TestDataFormNeverLarger), since it carries the same strings under shorter
// keys and drops collapse_key.
func Size(m push.Message) int {
	return len(MessageJSON(m, "", m.Deadline-contract.EventLifetime.Milliseconds()))
}

// build makes the v1 message for m: the data-only form (buildData) when
// dataOnly is set or m is a sealed alert (decisions table, "FCM message"),
// else the notification form (reference-behaviour §7.2): notification
// {title, body}; android {priority, ttl, collapse_key, notification
// {channel_id, tag, notification_count: the badge when m has one}}; data
// holding every orca field as a string, nulls dropped, and badge. A dismissal of that form is data-only: no notification, no
// android.notification, and no collapse_key: FCM keeps only four
// collapsible messages per offline device, so a burst of dismissals with
// one would lose all but four.
//
// The priority is "high" ([priority]): the SDK refuses "HIGH" (it accepts
// only "normal" and "high"), and FCM reads both.
func build(m push.Message, token string, now int64, dataOnly bool) *messaging.Message {
	if dataOnly || m.Sealed && m.Kind != contract.KindDismiss {
		return buildData(m, token, now)
	}
	ttl := ttlOf(m.Deadline, now)
	msg := &messaging.Message{
		Token: token,
		Data:  orcaData(m, 0),
		Android: &messaging.AndroidConfig{
			Priority: priority(m),
			TTL:      &ttl,
		},
	}
	if m.Kind != contract.KindDismiss {
		msg.Android.CollapseKey = collapseKey(m.CollapseID)
		msg.Notification = &messaging.Notification{Title: m.Title, Body: m.Body}
		msg.Android.Notification = &messaging.AndroidNotification{ChannelID: channel(m), Tag: m.CollapseID}
		if m.Badge > 0 {
			n := int(m.Badge)
			msg.Data[dataBadge], msg.Android.Notification.NotificationCount = strconv.FormatInt(m.Badge, 10), &n
		}
	}
	return msg
}

// The keys of Gen D's data-only alert beyond the orca fields (reference-
// behaviour §7.2, "Gen D change"): today's Orca phones draw the banner from
// them, under the tag, on the channel.
const (
	dataTitle   = "title"
	dataMessage = "message" // the body: the key is "message", not "body"
	dataTag     = "tag"
	dataChannel = "channelId"
	dataSound   = "sound" // "" when silent, absent otherwise
	// dataBadge is an alert's badge in either form (issue "What the phone
	// shows"), a decimal string; absent when the message has none.
	dataBadge = "badge"
)

// buildData makes Gen D's data-only message: android holds only priority
// and ttl (no notification, no android.notification, no collapse_key); data
// holds the orca fields as strings, nulls dropped, and for an alert also
// title, message, tag (the collapse id), channelId, sound "" when silent,
// and badge when m has one. A dismissal carries the orca strings only.
func buildData(m push.Message, token string, now int64) *messaging.Message {
	ttl := ttlOf(m.Deadline, now)
	data := orcaData(m, 5)
	if m.Kind != contract.KindDismiss {
		data[dataTitle], data[dataMessage], data[dataTag], data[dataChannel] = m.Title, m.Body, m.CollapseID, channel(m)
		if m.Silent {
			data[dataSound] = ""
		}
		if m.Badge > 0 {
			data[dataBadge] = strconv.FormatInt(m.Badge, 10)
		}
	}
	return &messaging.Message{
		Token:   token,
		Data:    data,
		Android: &messaging.AndroidConfig{Priority: priority(m), TTL: &ttl},
	}
}

// priority is android.priority in either form: "normal" for an alert whose
// urgency is normal, else "high", a dismissal's whatever it carries.
func priority(m push.Message) string {
	if m.Kind != contract.KindDismiss && m.Urgency == contract.UrgencyNormal {
		return "normal"
	}
	return "high"
}

// orcaData is every orca field of m as a string, nulls dropped, with room
// for extra keys more.
func orcaData(m push.Message, extra int) map[string]string {
	fields := m.OrcaFields()
	data := make(map[string]string, len(fields)+extra)
	for _, f := range fields {
		if f.Type != push.FieldNull {
			data[f.Key] = f.Value
		}
	}
	return data
}

// channel is the Android channel of an alert: silent when the sender asked
// for no sound (reference-behaviour §4.6).
func channel(m push.Message) string {
	if m.Silent {
		return contract.AndroidSilentChannel
	}
	return contract.AndroidChannel
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
