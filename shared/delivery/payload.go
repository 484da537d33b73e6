package delivery

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

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

// single is the payload of batch batchID of registration reg holding ev's
// notification alone.
func (p payloads) single(batchID, reg string, ev *event) string {
	b := append(make([]byte, 0, 64+len(ev.item)*4/3), '[')
	return string(append(p.appendMember(b, batchID, reg, ev.n, ev.item), ']'))
}

// join is payload, batch batchID's stored non-empty array, with ev's
// notification appended: joining an alert rewrites no earlier member.
func (p payloads) join(payload, batchID, reg string, ev *event) string {
	b := append(make([]byte, 0, len(payload)+64+len(ev.item)*4/3), payload[:len(payload)-1]...)
	b = append(b, ',')
	return string(append(p.appendMember(b, batchID, reg, ev.n, ev.item), ']'))
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
// stored beside it (the JSON string, nil when absent), or, stored before
// sealing, the notification itself (clear, sealed nil).
type member struct {
	sealed, id, clear []byte
}

// decode returns the members of batch batchID of registration reg; plain
// says whether the batch may hold members in the clear
// (store.PlainMembers). When a member opens under no key of the ring, is
// in the clear where it may not be, or its clear notificationId is not its
// sealed one, its error wraps seal.ErrUnopenable.
func (p payloads) decode(batchID, reg, payload string, plain bool) ([]contract.Notification, error) {
	ms, ok := scanFast([]byte(payload))
	if !ok {
		var err error
		if ms, err = scanAny([]byte(payload)); err != nil {
			return nil, fmt.Errorf("batch %s: %w", batchID, err)
		}
	}
	ns, err := p.open(ms, batchID, reg, plain, len(payload))
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", batchID, err)
	}
	return ns, nil
}

// open opens ms, the members of batch batchID of registration reg, into
// their notifications (see decode), in one buffer of size bytes or more.
func (p payloads) open(ms []member, batchID, reg string, plain bool, size int) ([]contract.Notification, error) {
	out := make([]byte, 1, size)
	out[0] = '['
	ad := make([]byte, 0, 64+len(batchID)+len(reg))
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		if m.sealed == nil {
			if !plain {
				return nil, errPlainMember
			}
			out = append(out, m.clear...)
			continue
		}
		sealed, ok := bytes.CutPrefix(m.sealed, []byte(v2))
		if ok {
			ad = adV2(ad[:0], batchID, reg, m.id)
		} else {
			ad = adV1(ad[:0], batchID, reg)
		}
		var err error
		if out, err = p.keys.Open(out, sealed, ad); err != nil {
			return nil, err
		}
	}
	ns, err := contract.DecodeNotifications(append(out, ']'))
	if err != nil {
		return nil, err
	}
	if len(ns) != len(ms) {
		return nil, errClearID
	}
	var id []byte
	for i, m := range ms {
		if m.sealed == nil {
			continue
		}
		id = id[:0]
		if ns[i].NotificationID != "" {
			id = contract.AppendJSString(id, ns[i].NotificationID)
		}
		if !bytes.Equal(id, m.id) {
			return nil, errClearID
		}
	}
	return ns, nil
}

// scanFast reads a payload of sealed members exactly as appendMember writes
// them. Any other form makes it give up (ok false).
func scanFast(b []byte) (ms []member, ok bool) {
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
		if !bytes.HasPrefix(b[i:], []byte(sealedPrefix)) {
			return nil, false
		}
		i += len(sealedPrefix)
		end := bytes.IndexByte(b[i:], '"')
		if end < 0 {
			return nil, false
		}
		m := member{sealed: b[i : i+end]}
		i += end + 1
		if bytes.HasPrefix(b[i:], []byte(idField+`"`)) {
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
func skipString(b []byte, i int) int {
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
			ms[i].clear = r
			continue
		}
		var m sealedMember
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if dec.Decode(&m) != nil {
			return nil, errClearField
		}
		ms[i] = member{sealed: []byte(m.Sealed), id: m.NotificationID}
	}
	return ms, nil
}
