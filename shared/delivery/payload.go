package delivery

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
)

// A batch's payload_json is the JSON array of its members in arrival order,
// each sealed (issue 23, issue 30 §4, design.md "what the store keeps"):
//
//	{"sealed":"v2.<key id>:<sealed text>","notificationId":"<id>"}
//
// The sealed text (seal.Ring) is the member's notification as
// contract.Notification's MarshalJSON writes it, title, body, worktreeId,
// paneKey and executionHost with the rest, under the ring's current key.
// Its additional data (adV2) binds it to every clear field the database
// reads for it: the batch and the registration, so that a member copied
// into another row opens nowhere, and the notificationId beside it (absent
// when the notification has none), which the claim reads in SQL to find the
// dismissal fences of a batch (store.ClaimBatch). Opening also checks that
// the clear notificationId is the sealed one: a member whose clear id was
// edited in the database opens nowhere, so it cannot hide from its fence.
//
// "v2." names that additional data. A member sealed before it (no prefix)
// was bound to the batch and the registration only (adV1); it still opens,
// and the check of the id holds it too. Stripping the prefix rebuilds the
// wrong additional data, so no member can be read as an older one. An
// instance of the previous version reads "v2.<key id>" as a key id its
// ring lacks and leaves the batch to a newer instance (rotation.go): a
// rollout loses nothing.
//
// A member stored before sealing, a notification object as it stands, is
// read only where store.PlainMembers allows it: at the claim of a batch
// stored before migration 0007, for a notification's lifetime after it.
// Anywhere else (a newer batch, admission's joins and dismissals) it makes
// the batch unopenable (errPlainMember), which the claim ends as it ends
// any batch no key opens.

// payloads seals and opens batch payloads under a key ring.
type payloads struct {
	keys *seal.Ring
}

const (
	// sealedPrefix starts every sealed member.
	sealedPrefix = `{"sealed":"`
	// idField follows the sealed text when the member has a notificationId.
	idField = `,"notificationId":`
	// v2 starts the sealed text of a member sealed with adV2.
	v2 = "v2."
)

var (
	// errClearID is the error of decode when a sealed member's clear
	// notificationId is not the one it seals.
	errClearID = fmt.Errorf("%w: a member's clear notificationId is not its sealed one", seal.ErrUnopenable)
	// errPlainMember is the error of decode when a member stored in the
	// clear is in a batch that may not hold one (store.PlainMembers).
	errPlainMember = fmt.Errorf("%w: a member in the clear in a batch stored after sealing", seal.ErrUnopenable)
	// errClearField is the error of decode when a sealed member holds a
	// field in the clear that its seal does not bind.
	errClearField = fmt.Errorf("%w: a sealed member holds another field in the clear", seal.ErrUnopenable)
)

// adV1 appends to b the additional data of a member of batch batchID of
// registration reg sealed before adV2: a version tag and the two ids, each
// after its length.
func adV1(b []byte, batchID, reg string) []byte {
	b = append(b, "orca-push/payload/1"...)
	return appendField(appendField(b, []byte(batchID)), []byte(reg))
}

// adV2 appends to b the additional data of a member of batch batchID of
// registration reg whose notificationId is stored beside it as the JSON
// string clearID (empty when it has none): a version tag, then the two ids
// and clearID, each after its length.
func adV2(b []byte, batchID, reg string, clearID []byte) []byte {
	b = append(b, "orca-push/payload/2"...)
	return appendField(appendField(appendField(b, []byte(batchID)), []byte(reg)), clearID)
}

// appendField appends f after its length.
func appendField(b, f []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(f))), f...)
}

// appendMember appends n, whose stored JSON is plain, sealed as a member of
// batch batchID of registration reg.
func (p payloads) appendMember(b []byte, batchID, reg string, n *contract.Notification, plain []byte) []byte {
	var id []byte
	if n.NotificationID != "" {
		id = contract.AppendJSString(nil, n.NotificationID)
	}
	b = append(b, sealedPrefix+v2...)
	b = p.keys.Seal(b, plain, adV2(make([]byte, 0, 32+len(batchID)+len(reg)+len(id)), batchID, reg, id))
	b = append(b, '"')
	if id != nil {
		b = append(append(b, idField...), id...)
	}
	return append(b, '}')
}

// memberCap is room enough for what appendMember appends for n, whose
// stored JSON is plain: the sealed text, the framing, and the
// notificationId (printable ASCII, each byte escaped in at most two).
func (p payloads) memberCap(n *contract.Notification, plain []byte) int {
	return len(sealedPrefix+v2+`"`+idField+`""}`) + p.keys.SealedLen(len(plain)) + 2*len(n.NotificationID)
}

// single is the payload of batch batchID of registration reg holding ev's
// notification alone.
func (p payloads) single(batchID, reg string, ev *event) string {
	b := append(make([]byte, 0, 2+p.memberCap(ev.n, ev.item)), '[')
	return string(append(p.appendMember(b, batchID, reg, ev.n, ev.item), ']'))
}

// join is payload, batch batchID's stored non-empty array, with ev's
// notification appended: joining an alert rewrites no earlier member. The
// joined payload is written once, in a buffer of its size: it is as large
// as the batch (up to contract.MaxBatchMembers sealed members), and a join
// writes it on every coalesced send.
func (p payloads) join(payload, batchID, reg string, ev *event) string {
	m := p.appendMember(make([]byte, 0, p.memberCap(ev.n, ev.item)), batchID, reg, ev.n, ev.item)
	var b strings.Builder
	b.Grow(len(payload) + 1 + len(m))
	b.WriteString(payload[:len(payload)-1])
	b.WriteByte(',')
	b.Write(m)
	b.WriteByte(']')
	return b.String()
}

// encode is the payload of batch batchID of registration reg holding ns,
// each sealed anew under the current key.
func (p payloads) encode(batchID, reg string, ns []contract.Notification) string {
	b := []byte{'['}
	for i := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.appendMember(b, batchID, reg, &ns[i], ns[i].AppendJSON(nil, true))
	}
	return string(append(b, ']'))
}

// OpenMembers returns the members of the stored batch b opened under keys,
// as admission opens them (a member in the clear is refused): for tools and
// tests that read what a batch holds. When a member opens under no key its
// error wraps seal.ErrUnopenable.
func OpenMembers(keys *seal.Ring, b store.Batch) ([]contract.Notification, error) {
	return payloads{keys}.decode(b.ID, b.RegistrationID, b.Payload, false)
}

// member is a stored member as read: its sealed text and the notificationId
// stored beside it (the JSON string, empty when absent), or, stored before
// sealing, the notification itself (clear, never empty when it is one).
// Its strings share the payload's bytes.
type member struct {
	sealed, id, clear string
}

// decode returns the members of batch batchID of registration reg; plain
// says whether the batch may hold members in the clear
// (store.PlainMembers). When a member opens under no key of the ring, is
// in the clear where it may not be, or its clear notificationId is not its
// sealed one, its error wraps seal.ErrUnopenable.
func (p payloads) decode(batchID, reg, payload string, plain bool) ([]contract.Notification, error) {
	return p.read(batchID, reg, payload, plain, contract.DecodeNotifications)
}

// summaries is decode for a coalescing join, which refuses members in the
// clear: the members hold only the fields contract.DecodeSummaries keeps,
// all a summary reads of the members before its latest.
func (p payloads) summaries(batchID, reg, payload string) ([]contract.Notification, error) {
	return p.read(batchID, reg, payload, false, contract.DecodeSummaries)
}

// decoder appends to dst the notifications of a JSON array of them:
// contract.DecodeNotifications or contract.DecodeSummaries.
type decoder func(dst []contract.Notification, payload []byte) ([]contract.Notification, error)

// read is decode with the opened members read by dec.
func (p payloads) read(batchID, reg, payload string, plain bool, dec decoder) ([]contract.Notification, error) {
	ms, ok := scanFast(payload)
	if !ok {
		var err error
		if ms, err = scanAny([]byte(payload)); err != nil {
			return nil, fmt.Errorf("batch %s: %w", batchID, err)
		}
	}
	ns, err := p.open(ms, batchID, reg, plain, dec)
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", batchID, err)
	}
	return ns, nil
}

// open opens ms, the members of batch batchID of registration reg, into
// their notifications read by dec (see decode). Each member is opened into
// one scratch buffer and read from it, so a batch is never held opened
// whole; the notifications have room for one more, which a join appends.
// A member that opens under no key fails the batch before one that opens
// into something dec refuses, wherever the two stand.
func (p payloads) open(ms []member, batchID, reg string, plain bool, dec decoder) ([]contract.Notification, error) {
	ns := make([]contract.Notification, 0, len(ms)+1)
	// The longest stored member bounds both scratch buffers: its sealed
	// text, and what any member opens into (no more bytes than its base64,
	// or its clear text), with the brackets around it.
	longest := 0
	for _, m := range ms {
		longest = max(longest, len(m.sealed), len(m.clear))
	}
	var (
		buf    = make([]byte, 0, longest+2)
		sealed = make([]byte, 0, longest)
		ad     = make([]byte, 0, 64+len(batchID)+len(reg))
		id     []byte
		decErr error
	)
	for _, m := range ms {
		buf = append(buf[:0], '[')
		if m.clear != "" {
			if !plain {
				return nil, errPlainMember
			}
			buf = append(buf, m.clear...)
		} else {
			text, ok := strings.CutPrefix(m.sealed, v2)
			id = append(id[:0], m.id...)
			if ok {
				ad = adV2(ad[:0], batchID, reg, id)
			} else {
				ad = adV1(ad[:0], batchID, reg)
			}
			var err error
			sealed = append(sealed[:0], text...)
			if buf, err = p.keys.Open(buf, sealed, ad); err != nil {
				return nil, err
			}
		}
		n := len(ns)
		var err error
		if ns, err = dec(ns, append(buf, ']')); err != nil || decErr != nil {
			decErr = cmp.Or(decErr, err)
			continue
		}
		if len(ns) != n+1 {
			return nil, errClearID
		}
		if m.clear != "" {
			continue
		}
		id = id[:0]
		if ns[n].NotificationID != "" {
			id = contract.AppendJSString(id, ns[n].NotificationID)
		}
		if string(id) != m.id {
			return nil, errClearID
		}
	}
	if decErr != nil {
		return nil, decErr
	}
	return ns, nil
}

// scanFast reads a payload of sealed members exactly as appendMember writes
// them. Any other form makes it give up (ok false).
func scanFast(b string) (ms []member, ok bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	for i := 1; i < len(b)-1; {
		if len(ms) > 0 {
			if b[i] != ',' {
				return nil, false
			}
			i++
		}
		if !strings.HasPrefix(b[i:], sealedPrefix) {
			return nil, false
		}
		i += len(sealedPrefix)
		end := strings.IndexByte(b[i:], '"')
		if end < 0 {
			return nil, false
		}
		m := member{sealed: b[i : i+end]}
		i += end + 1
		if strings.HasPrefix(b[i:], idField+`"`) {
			start := i + len(idField)
			if i = skipString(b, start+1); i < 0 {
				return nil, false
			}
			m.id = b[start:i]
		}
		if i >= len(b) || b[i] != '}' {
			return nil, false
		}
		i++
		ms = append(ms, m)
	}
	return ms, true
}

// skipString returns the index after the JSON string whose contents start
// at i, or -1 when it does not end.
func skipString(b string, i int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// sealedMember is a sealed member as stored: nothing else may stand beside
// the sealed text in the clear.
type sealedMember struct {
	Sealed         string          `json:"sealed"`
	NotificationID json.RawMessage `json:"notificationId"`
}

// scanAny reads any JSON array of members, sealed or stored before
// sealing.
func scanAny(b []byte) ([]member, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("decode members: %w", err)
	}
	ms := make([]member, len(raw))
	for i, r := range raw {
		var probe struct {
			Sealed *string `json:"sealed"`
		}
		if err := json.Unmarshal(r, &probe); err != nil {
			return nil, fmt.Errorf("decode members: %w", err)
		}
		if probe.Sealed == nil {
			ms[i].clear = string(r)
			continue
		}
		var m sealedMember
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if dec.Decode(&m) != nil {
			return nil, errClearField
		}
		ms[i] = member{sealed: m.Sealed, id: string(m.NotificationID)}
	}
	return ms, nil
}
