package contract

import (
	"slices"
	"strconv"
	"strings"
)

// Kind is a notification's kind; an omitted kind is an alert.
type Kind string

// The notification kinds.
const (
	KindAlert   Kind = "alert"
	KindDismiss Kind = "dismiss"
)

// Urgency is how promptly the platform should present an alert: APNs
// apns-priority and FCM android.priority. An omitted urgency is high, today's
// priority.
type Urgency string

// The urgencies.
const (
	UrgencyHigh   Urgency = "high"
	UrgencyNormal Urgency = "normal"
)

// Status is one registration's result in a /v1/send answer.
type Status string

// The per-registration statuses (reference-behaviour §4.7), always inside a
// 200.
const (
	StatusQueued      Status = "queued"
	StatusDead        Status = "dead"
	StatusRateLimited Status = "rate_limited"
	StatusError       Status = "error"
)

// Notification is the notification of POST /v1/send, as parsed. Optional
// strings are empty when absent (the schema refuses empty values for them).
type Notification struct {
	NotificationID string // optional; printable ASCII
	Seq            int64
	Epoch          string
	Source         Source
	Sound          *bool // nil when absent
	Kind           Kind  // empty when absent
	ExpiresAt      int64 // 0 when absent
	AgentState     AgentState
	Title          string
	Body           string
	WorktreeID     string // optional
	// PaneKey and ExecutionHost are Gen D's optional fields, forwarded to
	// the phone verbatim (decisions table). A PaneKey starting with
	// SealedPaneKeyPrefix marks sealed content ([Notification.Sealed]).
	PaneKey       string
	ExecutionHost string
	// Urgency is the optional urgency, empty when absent
	// ([Notification.EffectiveUrgency]).
	Urgency Urgency
}

// EffectiveUrgency returns the urgency, with an omitted urgency read as
// high.
func (n *Notification) EffectiveUrgency() Urgency {
	if n.Urgency == "" {
		return UrgencyHigh
	}
	return n.Urgency
}

// EffectiveKind returns the kind, with an omitted kind read as an alert.
func (n *Notification) EffectiveKind() Kind {
	if n.Kind == "" {
		return KindAlert
	}
	return n.Kind
}

// Silent reports whether the sender asked for no sound.
func (n *Notification) Silent() bool { return n.Sound != nil && !*n.Sound }

// Sealed reports whether the notification's content is sealed for the phone
// ([SealedPaneKey] of its paneKey): its title is a placeholder, and only the
// phone can open what its paneKey carries. A sealed alert is never
// summarised and is due at once; on Android it always goes as a data-only
// FCM message (decisions table).
func (n *Notification) Sealed() bool { return SealedPaneKey(n.PaneKey) }

// SealedPaneKey reports whether paneKey marks sealed content: it starts
// with SealedPaneKeyPrefix. It is the one place that test is written.
func SealedPaneKey(paneKey string) bool { return strings.HasPrefix(paneKey, SealedPaneKeyPrefix) }

// SendRequest is the body of POST /v1/send.
type SendRequest struct {
	// RegistrationIDs holds the ids with duplicates removed, in first-seen
	// order.
	RegistrationIDs []string
	Notification    Notification
}

// SendResult is one registration's result.
type SendResult struct {
	RegistrationID string `json:"registrationId"`
	Status         Status `json:"status"`
}

// SendResponse is the 200 answer of POST /v1/send.
type SendResponse struct {
	Results []SendResult `json:"results"`
}

// DecodeSendRequest strictly decodes a send (reference-behaviour §2.3): 1..20
// registration ids counted before duplicates are removed, and the notification
// rules, ending with the 3000-byte limit on its JSON. Any failure is
// ErrInvalidRequest.
func DecodeSendRequest(body []byte) (SendRequest, error) {
	o, err := parseTop(body)
	if err != nil {
		return SendRequest{}, err
	}
	o.version()
	ids := o.stringArray("registrationIds")
	no, hasNotification := o.nested("notification", true)
	var n Notification
	if hasNotification {
		n = readNotification(no)
		if err := no.finish("notification"); err != nil {
			o.fail(err)
		}
	}
	if err := o.finish("body"); err != nil {
		return SendRequest{}, err
	}
	if len(ids) < 1 || len(ids) > MaxRegistrationIDs {
		return SendRequest{}, invalid("registrationIds must hold 1..%d ids", MaxRegistrationIDs)
	}
	unique := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !validOpaqueID(id) {
			return SendRequest{}, invalid("registrationIds holds a malformed id")
		}
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	if err := n.validate(); err != nil {
		return SendRequest{}, err
	}
	return SendRequest{RegistrationIDs: unique, Notification: n}, nil
}

// readNotification reads the notification's fields; validate checks them.
func readNotification(o *object) Notification {
	var n Notification
	n.NotificationID, _ = o.str("notificationId", false)
	n.Seq, _ = o.integer("notificationSeq", true, 0)
	n.Epoch, _ = o.str("notificationEpoch", true)
	src, _ := o.str("source", true)
	n.Source = Source(src)
	if b, ok := o.boolean("sound"); ok {
		n.Sound = &b
	}
	kind, hasKind := o.str("kind", false)
	n.Kind = Kind(kind)
	if hasKind && n.Kind != KindAlert && n.Kind != KindDismiss {
		o.fail(invalid("kind is unknown"))
	}
	n.ExpiresAt, _ = o.integer("expiresAt", false, 1)
	if raw, ok := o.fields["agentState"]; !ok {
		o.fail(invalid("agentState is required"))
	} else if !isNull(raw) {
		s, _ := o.str("agentState", true)
		n.AgentState = AgentState(s)
		if n.AgentState != AgentNeedsInput && n.AgentState != AgentFinished {
			o.fail(invalid("agentState is unknown"))
		}
	} else {
		o.take("agentState")
	}
	n.Title, _ = o.str("title", true)
	n.Body, _ = o.str("body", true)
	if id, ok := o.str("worktreeId", false); ok && id == "" {
		o.fail(invalid("worktreeId is empty"))
	} else {
		n.WorktreeID = id
	}
	if id, ok := o.fields["notificationId"]; ok && string(id) == `""` {
		o.fail(invalid("notificationId is empty"))
	}
	if k, ok := o.str("paneKey", false); ok && k == "" {
		o.fail(invalid("paneKey is empty"))
	} else {
		n.PaneKey = k
	}
	if h, ok := o.str("executionHost", false); ok && h == "" {
		o.fail(invalid("executionHost is empty"))
	} else {
		n.ExecutionHost = h
	}
	u, hasUrgency := o.str("urgency", false)
	n.Urgency = Urgency(u)
	if hasUrgency && n.Urgency != UrgencyHigh && n.Urgency != UrgencyNormal {
		o.fail(invalid("urgency is unknown"))
	}
	return n
}

// validate applies the field rules that need the whole notification.
func (n *Notification) validate() error {
	if l := len(n.NotificationID); l > MaxNotificationID || !printableASCII(n.NotificationID) {
		return invalid("notificationId is out of range")
	}
	if !validOpaqueID(n.Epoch) {
		return invalid("notificationEpoch is out of range")
	}
	switch n.Source {
	case SourceAgentTaskComplete, SourceTerminalBell, SourcePlugin:
	default:
		return invalid("source is unknown")
	}
	if l := UTF16Len(n.Title); l < 1 || l > MaxTitle {
		return invalid("title is out of range")
	}
	if UTF16Len(n.Body) > MaxBody {
		return invalid("body is out of range")
	}
	if UTF16Len(n.WorktreeID) > MaxWorktreeID {
		return invalid("worktreeId is out of range")
	}
	if UTF16Len(n.PaneKey) > MaxPaneKey {
		return invalid("paneKey is out of range")
	}
	if n.ExecutionHost != "" && !validExecutionHost(n.ExecutionHost) {
		return invalid("executionHost is malformed")
	}
	if n.Kind == KindDismiss && n.NotificationID == "" {
		return invalid("a dismissal needs a notificationId")
	}
	if len(n.AppendJSON(nil, true)) > MaxNotificationBytes {
		return invalid("notification is over %d bytes", MaxNotificationBytes)
	}
	return nil
}

// printableASCII reports whether every byte of s is in 0x20..0x7E.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validExecutionHost reports whether s is an executionHost as Gen D's
// schema accepts it: at most MaxExecutionHost UTF-16 code units,
// ExecutionHostPrefix, then one or more characters none of which is '|' or
// JavaScript white space (the regular expression /^runtime:[^|\s]+$/).
func validExecutionHost(s string) bool {
	rest, ok := strings.CutPrefix(s, ExecutionHostPrefix)
	if !ok || rest == "" || UTF16Len(s) > MaxExecutionHost {
		return false
	}
	for _, r := range rest {
		if r == '|' || jsWhiteSpace(r) {
			return false
		}
	}
	return true
}

// jsWhiteSpace reports whether r is in JavaScript's \s: ECMA-262's
// WhiteSpace and LineTerminator code points, listed one by one. Go's \s
// (ASCII only) and unicode.IsSpace (which has U+0085 and lacks U+FEFF) are
// other sets.
func jsWhiteSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ',
		'\u00a0', '\u1680',
		'\u2000', '\u2001', '\u2002', '\u2003', '\u2004', '\u2005',
		'\u2006', '\u2007', '\u2008', '\u2009', '\u200a',
		'\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return false
}

// AppendJSON appends the notification's JSON as the original gateway's schema
// rebuilt it: schema key order, absent optional keys omitted, agentState null
// when empty, strings escaped as JavaScript's JSON.stringify escapes them, so
// its length is the length the 3000-byte rule measures. With withSound false,
// sound is left out and kind is normalised (an omitted kind written as
// "alert"): that is the content the idempotency fingerprint hashes.
//
// paneKey and executionHost come last, in that order, after Gen B's keys:
// nothing in ../shared records where Gen D's schema puts them, and the
// 3000-byte rule does not depend on key order. Absent, they write nothing,
// so an older desktop's notification keeps its bytes, its fingerprint and
// its stored form. urgency follows them, as given; in the fingerprint form
// it is normalised like kind, but the other way round: high (the omitted
// urgency's meaning) is left out, so an omitted, an explicit high and an
// older desktop's notification are the same content, and only normal is
// written.
func (n *Notification) AppendJSON(b []byte, withSound bool) []byte {
	// Room for the keys, the numbers and the strings unescaped, so that
	// the common notification is written without growing b again.
	b = slices.Grow(b, 276+len(n.NotificationID)+len(n.Epoch)+len(n.Title)+len(n.Body)+
		len(n.WorktreeID)+len(n.PaneKey)+len(n.ExecutionHost))
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendJSString(b, k)
		b = append(b, ':')
	}
	if n.NotificationID != "" {
		key("notificationId")
		b = AppendJSString(b, n.NotificationID)
	}
	key("notificationSeq")
	b = strconv.AppendInt(b, n.Seq, 10)
	key("notificationEpoch")
	b = AppendJSString(b, n.Epoch)
	key("source")
	b = AppendJSString(b, string(n.Source))
	if withSound && n.Sound != nil {
		key("sound")
		b = strconv.AppendBool(b, *n.Sound)
	}
	if !withSound {
		key("kind")
		b = AppendJSString(b, string(n.EffectiveKind()))
	} else if n.Kind != "" {
		key("kind")
		b = AppendJSString(b, string(n.Kind))
	}
	if n.ExpiresAt != 0 {
		key("expiresAt")
		b = strconv.AppendInt(b, n.ExpiresAt, 10)
	}
	key("agentState")
	if n.AgentState == "" {
		b = append(b, "null"...)
	} else {
		b = AppendJSString(b, string(n.AgentState))
	}
	key("title")
	b = AppendJSString(b, n.Title)
	key("body")
	b = AppendJSString(b, n.Body)
	if n.WorktreeID != "" {
		key("worktreeId")
		b = AppendJSString(b, n.WorktreeID)
	}
	if n.PaneKey != "" {
		key("paneKey")
		b = AppendJSString(b, n.PaneKey)
	}
	if n.ExecutionHost != "" {
		key("executionHost")
		b = AppendJSString(b, n.ExecutionHost)
	}
	if withSound && n.Urgency != "" || !withSound && n.Urgency == UrgencyNormal {
		key("urgency")
		b = AppendJSString(b, string(n.Urgency))
	}
	return append(b, '}')
}

// AppendJSString appends s as JavaScript's JSON.stringify writes a string:
// only '"', '\\' and control characters are escaped, everything else is raw
// UTF-8.
func AppendJSString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0 // the run of bytes copied as they stand begins here
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		start = i + 1
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
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// MarshalJSON returns [Notification.AppendJSON] with sound: the form the
// gateway stores.
func (n Notification) MarshalJSON() ([]byte, error) { return n.AppendJSON(nil, true), nil }

// UnmarshalJSON reads the stored form back. It checks the shape, not the
// limits: stored notifications were validated on the way in.
func (n *Notification) UnmarshalJSON(data []byte) error {
	o, err := parseObject(data, "notification")
	if err != nil {
		return err
	}
	*n = readNotification(o)
	return o.finish("notification")
}
