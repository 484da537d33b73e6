package push

import (
	"strconv"

	"onorca.dev/push/shared/contract"
)

// Message is what one provider request carries: the visible alert (or the
// silent dismissal) and the orca data the phone reads. [Build] makes it from a
// batch; providers turn it into their own wire format.
type Message struct {
	// Kind is KindAlert or KindDismiss: the latest member's kind.
	Kind contract.Kind
	// Title and Body are the text shown: the member's own for a single
	// alert, a summary's otherwise (reference-behaviour §5.3).
	Title string
	Body  string
	// Silent reports whether the latest member asked for no sound (§4.6).
	Silent bool
	// CollapseID replaces an earlier banner with the same id (§5.4).
	CollapseID string
	// Deadline is the batch's deadline in epoch milliseconds (§4.5).
	Deadline int64
	// HostFingerprint names the sending host; it is the APNs thread id.
	HostFingerprint string

	// The remaining orca fields are the latest member's (§5.3). An empty
	// WorktreeID or NotificationID is absent; an empty AgentState is null.
	WorktreeID        string
	NotificationID    string
	NotificationSeq   int64
	NotificationEpoch string
	Source            contract.Source
	AgentState        contract.AgentState
	// CoalescedCount is the number of members, always present.
	CoalescedCount int
	// SummaryMembers lists every member in arrival order when the batch
	// could be summarized ([CanSummarize]); nil otherwise.
	SummaryMembers []Member
	// PaneKey and ExecutionHost are the latest member's Gen D fields,
	// forwarded verbatim; empty when absent.
	PaneKey       string
	ExecutionHost string
	// Urgency is the most urgent member's (contract.Notification.
	// EffectiveUrgency): UrgencyNormal when every member is normal, else
	// empty, which means high (today's priority). A normal alert goes with
	// APNs priority 5 and FCM priority normal. Dismissals keep their own
	// priority whatever it is.
	Urgency contract.Urgency
	// Badge is the app-icon badge an alert carries (issue "What the phone
	// shows"): the registration's count as it stands at the attempt (raised
	// by this push at its first), stamped by delivery, not by [Build]. 0
	// means none, and leaves the message's bytes as they were: a count of 0
	// (a reset, a new token, while a retry waited) goes as none, which
	// leaves the icon as the phone set it. Dismissals carry none.
	Badge int64
	// Sealed reports whether the latest member's content is sealed
	// (contract.Notification.Sealed): FCM then sends an alert as a
	// data-only message, whatever the client's form.
	Sealed bool
}

// Member identifies one event of a summary.
type Member struct {
	NotificationID    string
	NotificationEpoch string
	NotificationSeq   int64
}

// FieldType says how a [Field]'s value is written.
type FieldType uint8

// The field types of the orca data.
const (
	// FieldString is a string: APNs writes it quoted, FCM as is.
	FieldString FieldType = iota + 1
	// FieldNumber is an integer's decimal digits: APNs writes a JSON
	// number, FCM the digits as a string.
	FieldNumber
	// FieldNull is a null: APNs keeps it, FCM drops the key.
	FieldNull
	// FieldJSON is JSON text: APNs embeds it, FCM sends the text as a
	// string.
	FieldJSON
)

// String returns the type's lower-case name.
func (t FieldType) String() string {
	switch t {
	case FieldString:
		return "string"
	case FieldNumber:
		return "number"
	case FieldNull:
		return "null"
	case FieldJSON:
		return "json"
	}
	return "FieldType(" + strconv.Itoa(int(t)) + ")"
}

// Field is one key of the orca data.
type Field struct {
	Key   string
	Type  FieldType
	Value string
}

// OrcaFields returns the orca data in its wire order (reference-behaviour
// §7.1): kind (dismissals only), hostFingerprint, worktreeId?,
// notificationId?, notificationSeq, notificationEpoch, source, agentState,
// coalescedCount, summaryMembers?, then Gen D's paneKey? and
// executionHost? (decisions table). Gen D's order for those two is not
// recorded; last, they leave every older message's bytes as they were.
func (m *Message) OrcaFields() []Field {
	f := make([]Field, 0, 12)
	if m.Kind == contract.KindDismiss {
		f = append(f, Field{Key: "kind", Type: FieldString, Value: string(contract.KindDismiss)})
	}
	f = append(f, Field{Key: "hostFingerprint", Type: FieldString, Value: m.HostFingerprint})
	if m.WorktreeID != "" {
		f = append(f, Field{Key: "worktreeId", Type: FieldString, Value: m.WorktreeID})
	}
	if m.NotificationID != "" {
		f = append(f, Field{Key: "notificationId", Type: FieldString, Value: m.NotificationID})
	}
	f = append(f,
		Field{Key: "notificationSeq", Type: FieldNumber, Value: strconv.FormatInt(m.NotificationSeq, 10)},
		Field{Key: "notificationEpoch", Type: FieldString, Value: m.NotificationEpoch},
		Field{Key: "source", Type: FieldString, Value: string(m.Source)},
	)
	if m.AgentState == "" {
		f = append(f, Field{Key: "agentState", Type: FieldNull})
	} else {
		f = append(f, Field{Key: "agentState", Type: FieldString, Value: string(m.AgentState)})
	}
	f = append(f, Field{Key: "coalescedCount", Type: FieldNumber, Value: strconv.Itoa(m.CoalescedCount)})
	if len(m.SummaryMembers) > 0 {
		n := 2
		for _, mb := range m.SummaryMembers {
			n += 80 + len(mb.NotificationID) + len(mb.NotificationEpoch)
		}
		f = append(f, Field{Key: "summaryMembers", Type: FieldJSON, Value: string(appendMembersJSON(make([]byte, 0, n), m.SummaryMembers))})
	}
	if m.PaneKey != "" {
		f = append(f, Field{Key: "paneKey", Type: FieldString, Value: m.PaneKey})
	}
	if m.ExecutionHost != "" {
		f = append(f, Field{Key: "executionHost", Type: FieldString, Value: m.ExecutionHost})
	}
	return f
}

// appendMembersJSON appends members as JavaScript's JSON.stringify writes
// them: [{"notificationId","notificationEpoch","notificationSeq"}, ...].
func appendMembersJSON(b []byte, members []Member) []byte {
	b = append(b, '[')
	for i, mb := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"notificationId":`...)
		b = contract.AppendJSString(b, mb.NotificationID)
		b = append(b, `,"notificationEpoch":`...)
		b = contract.AppendJSString(b, mb.NotificationEpoch)
		b = append(b, `,"notificationSeq":`...)
		b = strconv.AppendInt(b, mb.NotificationSeq, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// Target is the device a message goes to.
type Target struct {
	Platform contract.Platform
	// Token is the native push token.
	Token string
	// APNSEnvironment selects the APNs host; empty means production
	// (reference-behaviour §7.1). It is empty for Android.
	APNSEnvironment contract.APNSEnvironment
}
