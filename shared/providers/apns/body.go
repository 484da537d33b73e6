package apns

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sideshow/apns2"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
)

// Body returns m's APNs payload exactly as it goes on the wire
// (reference-behaviour §7.1): aps first, then orca. An alert's aps is
// {alert: {title, body}, sound: "default" (left out when silent),
// thread-id: the host fingerprint, badge: m.Badge when it has one}; a
// dismissal's is {content-available: 1} only. orca keeps numbers as numbers, a null agentState, and
// summaryMembers as an array.
//
// apns2 encodes the payload with encoding/json, which escapes '<', '>',
// '&', U+2028 and U+2029 even in a Marshaler's output; Body writes strings
// as encoding/json does, so its bytes are the wire's and its length is
// what APNs' 4 KB limit measures.
func Body(m push.Message) []byte {
	fields := m.OrcaFields()
	n := 160 + len(m.Title) + len(m.Body) + 2*len(m.HostFingerprint)
	for _, f := range fields {
		n += len(f.Key) + len(f.Value) + 4
	}
	b := make([]byte, 0, n+n/8)
	if m.Kind == contract.KindDismiss {
		b = append(b, `{"aps":{"content-available":1}`...)
	} else {
		b = append(b, `{"aps":{"alert":{"title":`...)
		b = appendString(b, m.Title)
		b = append(b, `,"body":`...)
		b = appendString(b, m.Body)
		b = append(b, '}')
		if !m.Silent {
			b = append(b, `,"sound":"default"`...)
		}
		b = append(b, `,"thread-id":`...)
		b = appendString(b, m.HostFingerprint)
		if m.Badge > 0 {
			b = append(b, `,"badge":`...)
			b = strconv.AppendInt(b, m.Badge, 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"orca":{`...)
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Key)
		b = append(b, ':')
		switch f.Type {
		case push.FieldString:
			b = appendString(b, f.Value)
		case push.FieldNull:
			b = append(b, "null"...)
		case push.FieldNumber:
			b = append(b, f.Value...)
		default: // FieldJSON: JSON text with JSON.stringify's escaping
			b = appendJSON(b, f.Value)
		}
	}
	return append(b, "}}"...)
}

// hex is the lower-case hex alphabet of \u escapes.
const hex = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json writes it
// with HTML escaping on: '"' and '\\' and control characters escaped (\b,
// \f, \n, \r and \t in short form), '<', '>', '&', U+2028 and U+2029 as \u
// escapes, and invalid UTF-8 as U+FFFD. Runs of plain bytes are copied at
// once.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSON appends JSON text written by JSON.stringify (valid UTF-8,
// only '"', '\\' and control characters escaped) with the escapes
// encoding/json adds: '<', '>', '&', U+2028 and U+2029. Those appear only
// inside its strings, so this is encoding/json's compaction of it.
func appendJSON(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			start = i + 1
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xa8:
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[s[i+2]&0xf])
			i += 2
			start = i + 1
		}
	}
	return append(b, s[start:]...)
}

// notification builds apns2's request for m to token: an alert is push type
// alert, priority 10 (5 when its urgency is normal), with apns-collapse-id;
// a dismissal is background,
// priority 5, without it. apns-expiration is the deadline floored to seconds
// (reference-behaviour §4.5, §7.1).
func notification(token, topic string, m push.Message) *apns2.Notification {
	n := &apns2.Notification{
		DeviceToken: token,
		Topic:       topic,
		Expiration:  time.UnixMilli(m.Deadline),
		Payload:     Body(m),
		PushType:    apns2.PushTypeAlert,
		Priority:    apns2.PriorityHigh,
		CollapseID:  m.CollapseID,
	}
	if m.Kind == contract.KindDismiss {
		n.PushType, n.Priority, n.CollapseID = apns2.PushTypeBackground, apns2.PriorityLow, ""
	} else if m.Urgency == contract.UrgencyNormal {
		n.Priority = apns2.PriorityLow
	}
	return n
}
