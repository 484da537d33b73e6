package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// DecodeNotifications appends to dst the notifications of payload, a JSON
// array of them as [AppendNotifications] wrote it: the payload of a
// delivery batch. Like [Notification.UnmarshalJSON] it checks the shape, not
// the limits. Batch payloads are read on every coalescing decision, so it
// scans the exact form [Notification.AppendJSON] writes directly and falls
// back to encoding/json for anything else; both read the same
// notifications. On error it returns dst as it was.
func DecodeNotifications(dst []Notification, payload []byte) ([]Notification, error) {
	if ns, ok := scan(dst, payload, false); ok {
		return ns, nil
	}
	var stored []storedNotification
	if err := json.Unmarshal(payload, &stored); err != nil {
		return dst, fmt.Errorf("decode notifications: %w", err)
	}
	for i := range stored {
		dst = append(dst, stored[i].notification())
	}
	return dst, nil
}

// DecodeSummaries is [DecodeNotifications] keeping only the fields a
// summary reads of its members before the latest one: NotificationID, Seq,
// Epoch, Kind, AgentState and Urgency. Every other field is left zero,
// unread but checked as DecodeNotifications checks it, so both accept the
// same payloads. A coalescing join reads the open batch this way: it learns
// whether one more member still summarises without building the title,
// body and routing fields of members the summary does not show.
func DecodeSummaries(dst []Notification, payload []byte) ([]Notification, error) {
	if ns, ok := scan(dst, payload, true); ok {
		return ns, nil
	}
	n := len(dst)
	dst, err := DecodeNotifications(dst, payload)
	for i := n; i < len(dst); i++ {
		dst[i] = summaryFields(&dst[i])
	}
	return dst, err
}

// summaryFields is n with only the fields DecodeSummaries keeps.
func summaryFields(n *Notification) Notification {
	return Notification{NotificationID: n.NotificationID, Seq: n.Seq, Epoch: n.Epoch, Kind: n.Kind,
		AgentState: n.AgentState, Urgency: n.Urgency}
}

// AppendNotifications appends ns as a JSON array of their stored form
// ([Notification.MarshalJSON]).
func AppendNotifications(b []byte, ns []Notification) []byte {
	b = append(b, '[')
	for i := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = ns[i].AppendJSON(b, true)
	}
	return append(b, ']')
}

// storedNotification is the stored JSON as encoding/json's struct decoder
// reads it, for DecodeNotifications' fallback.
type storedNotification struct {
	NotificationID string      `json:"notificationId"`
	Seq            int64       `json:"notificationSeq"`
	Epoch          string      `json:"notificationEpoch"`
	Source         Source      `json:"source"`
	Sound          *bool       `json:"sound"`
	Kind           Kind        `json:"kind"`
	ExpiresAt      int64       `json:"expiresAt"`
	AgentState     *AgentState `json:"agentState"`
	Title          string      `json:"title"`
	Body           string      `json:"body"`
	WorktreeID     string      `json:"worktreeId"`
	PaneKey        string      `json:"paneKey"`
	ExecutionHost  string      `json:"executionHost"`
	Urgency        Urgency     `json:"urgency"`
}

func (s *storedNotification) notification() Notification {
	n := Notification{
		NotificationID: s.NotificationID, Seq: s.Seq, Epoch: s.Epoch, Source: s.Source,
		Sound: s.Sound, Kind: s.Kind, ExpiresAt: s.ExpiresAt,
		Title: s.Title, Body: s.Body, WorktreeID: s.WorktreeID,
		PaneKey: s.PaneKey, ExecutionHost: s.ExecutionHost, Urgency: s.Urgency,
	}
	if s.AgentState != nil {
		n.AgentState = *s.AgentState
	}
	return n
}

// storedScanner reads the exact bytes AppendJSON writes: its keys in its
// order, strings escaped as AppendJSString escapes them. Any other input,
// valid JSON or not, makes it give up (ok false). With summary set it keeps
// only the fields DecodeSummaries keeps.
type storedScanner struct {
	b       []byte
	i       int
	ok      bool
	summary bool
}

// scan appends to dst the notifications of the array b read with a
// storedScanner; when it gives up it returns dst as it was.
func scan(dst []Notification, b []byte, summary bool) ([]Notification, bool) {
	s := storedScanner{b: b, ok: true, summary: summary}
	out := slices.Grow(dst, bytes.Count(b, []byte(`{"`)))
	if !s.lit("[") {
		return dst, false
	}
	for s.ok && !s.lit("]") {
		if len(out) > len(dst) && !s.lit(",") {
			return dst, false
		}
		out = append(out, s.notification())
	}
	if !s.ok || s.i != len(b) {
		return dst, false
	}
	return out, true
}

// notification scans one object, optional keys included only when present.
func (s *storedScanner) notification() Notification {
	var n Notification
	s.expect("{")
	if s.lit(`"notificationId":`) {
		n.NotificationID = s.str()
		s.expect(",")
	}
	s.expect(`"notificationSeq":`)
	n.Seq = s.int()
	s.expect(`,"notificationEpoch":`)
	n.Epoch = s.str()
	s.expect(`,"source":`)
	n.Source = Source(s.field())
	if s.lit(`,"sound":`) {
		b := s.lit("true")
		if !b {
			s.expect("false")
		}
		if !s.summary {
			n.Sound = &b
		}
	}
	if s.lit(`,"kind":`) {
		n.Kind = Kind(s.str())
	}
	if s.lit(`,"expiresAt":`) {
		if v := s.int(); !s.summary {
			n.ExpiresAt = v
		}
	}
	s.expect(`,"agentState":`)
	if !s.lit("null") {
		n.AgentState = AgentState(s.str())
	}
	s.expect(`,"title":`)
	n.Title = s.field()
	s.expect(`,"body":`)
	n.Body = s.field()
	if s.lit(`,"worktreeId":`) {
		n.WorktreeID = s.field()
	}
	if s.lit(`,"paneKey":`) {
		n.PaneKey = s.field()
	}
	if s.lit(`,"executionHost":`) {
		n.ExecutionHost = s.field()
	}
	if s.lit(`,"urgency":`) {
		n.Urgency = Urgency(s.str())
	}
	s.expect("}")
	return n
}

// lit consumes p if the input continues with it.
func (s *storedScanner) lit(p string) bool {
	if s.ok && bytes.HasPrefix(s.b[s.i:], []byte(p)) {
		s.i += len(p)
		return true
	}
	return false
}

// expect consumes p or gives up.
func (s *storedScanner) expect(p string) {
	if !s.lit(p) {
		s.ok = false
	}
}

// int scans a decimal integer as strconv.AppendInt writes it: an optional
// minus, then 0 or digits without a leading zero.
func (s *storedScanner) int() int64 {
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	digits := j
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		j++
	}
	leadingZero := j > digits+1 && s.b[digits] == '0'
	v, err := strconv.ParseInt(string(s.b[s.i:j]), 10, 64)
	if !s.ok || err != nil || leadingZero {
		s.ok = false
		return 0
	}
	s.i = j
	return v
}

// field scans a string that a summary does not read: as str does, or, with
// summary set, checking it without keeping it. A skipped string's UTF-8 is
// not checked: encoding/json reads invalid UTF-8 too (as U+FFFD), so the
// fallback would accept it as well, and drop it the same way.
func (s *storedScanner) field() string {
	if !s.summary {
		return s.str()
	}
	if !s.lit(`"`) {
		s.ok = false
		return ""
	}
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return ""
		case c == '\\':
			s.escaped(s.i) // rare: checked as str checks it, then dropped
			return ""
		case c < 0x20:
			s.ok = false
			return ""
		}
	}
	s.ok = false
	return ""
}

// str scans a string as AppendJSString writes it: raw valid UTF-8 with '"',
// '\\' and control characters escaped.
func (s *storedScanner) str() string {
	if !s.lit(`"`) {
		s.ok = false
		return ""
	}
	start := s.i
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			if !utf8.Valid(s.b[start:j]) {
				s.ok = false
			}
			return string(s.b[start:j])
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			s.ok = false
			return ""
		}
	}
	s.ok = false
	return ""
}

// escaped finishes a string holding escapes, from its first byte at start.
func (s *storedScanner) escaped(start int) string {
	out := make([]byte, 0, 64)
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			if !utf8.Valid(out) {
				s.ok = false
			}
			return string(out)
		case c < 0x20 || c == '\\' && j+1 >= len(s.b):
			s.ok = false
			return ""
		case c != '\\':
			out = append(out, c)
			continue
		}
		j++
		switch e := s.b[j]; e {
		case '"', '\\':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u': // AppendJSString writes \u00XX for other control characters
			v, err := strconv.ParseUint(string(s.b[j+1:min(j+5, len(s.b))]), 16, 8)
			if err != nil || j+5 > len(s.b) || v >= 0x20 {
				s.ok = false
				return ""
			}
			out = append(out, byte(v))
			j += 4
		default:
			s.ok = false
			return ""
		}
	}
	s.ok = false
	return ""
}
