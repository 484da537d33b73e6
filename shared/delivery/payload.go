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
// each sealed (issue 23, design.md "what the store keeps"):
//
//	{"sealed":"<key id>:<base64 nonce+ciphertext>","notificationId":"<id>"}
//
// The sealed text is the member's notification as contract.Notification's
// MarshalJSON writes it, title, body, worktreeId, paneKey and executionHost
// with the rest, under the ring's current key (seal.Ring), bound by its
// additional data to the batch and the registration: a member copied into
// another row opens nowhere. notificationId stays readable beside it (absent
// when the notification has none) because the claim reads it in SQL to find
// the dismissal fences of a batch (store.ClaimBatch). A member written before
// sealing, a notification object as it stands, is read as it is: it is gone
// within a notification's lifetime of the upgrade.

// payloads seals and opens batch payloads under a key ring.
type payloads struct {
	keys *seal.Ring
}

// sealedPrefix starts every sealed member.
const sealedPrefix = `{"sealed":"`

// ad is the additional data a member of batch batchID of registration reg is
// sealed with: a version tag and the two ids, each after its length.
func ad(batchID, reg string) []byte {
	b := make([]byte, 0, 24+len(batchID)+len(reg))
	b = append(b, "orca-push/payload/1"...)
	for _, s := range []string{batchID, reg} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// appendMember appends n, whose stored JSON is plain, sealed as a member of
// batch batchID of registration reg.
func (p payloads) appendMember(b []byte, data []byte, n *contract.Notification, plain []byte) []byte {
	b = append(b, sealedPrefix...)
	b = p.keys.Seal(b, plain, data)
	b = append(b, '"')
	if n.NotificationID != "" {
		b = append(b, `,"notificationId":`...)
		b = contract.AppendJSString(b, n.NotificationID)
	}
	return append(b, '}')
}

// single is the payload of batch batchID of registration reg holding ev's
// notification alone.
func (p payloads) single(batchID, reg string, ev *event) string {
	b := append(make([]byte, 0, 64+len(ev.item)*4/3), '[')
	return string(append(p.appendMember(b, ad(batchID, reg), ev.n, ev.item), ']'))
}

// join is payload, batch batchID's stored non-empty array, with ev's
// notification appended: joining an alert rewrites no earlier member.
func (p payloads) join(payload, batchID, reg string, ev *event) string {
	b := append(make([]byte, 0, len(payload)+64+len(ev.item)*4/3), payload[:len(payload)-1]...)
	b = append(b, ',')
	return string(append(p.appendMember(b, ad(batchID, reg), ev.n, ev.item), ']'))
}

// encode is the payload of batch batchID of registration reg holding ns,
// each sealed anew under the current key.
func (p payloads) encode(batchID, reg string, ns []contract.Notification) string {
	data := ad(batchID, reg)
	b := []byte{'['}
	for i := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.appendMember(b, data, &ns[i], ns[i].AppendJSON(nil, true))
	}
	return string(append(b, ']'))
}

// OpenMembers returns the members of the stored batch b opened under keys,
// as the Deliverer opens them: for tools and tests that read what a batch
// holds. When a member opens under no key its error wraps
// seal.ErrUnopenable.
func OpenMembers(keys *seal.Ring, b store.Batch) ([]contract.Notification, error) {
	return payloads{keys}.decode(b.ID, b.RegistrationID, b.Payload)
}

// decode returns the members of batch batchID of registration reg. When a
// member opens under no key of the ring, its error wraps
// seal.ErrUnopenable.
func (p payloads) decode(batchID, reg, payload string) ([]contract.Notification, error) {
	data := ad(batchID, reg)
	plain, ok, err := p.openFast([]byte(payload), data)
	if !ok {
		plain, err = p.openAny([]byte(payload), data)
	}
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", batchID, err)
	}
	ns, err := contract.DecodeNotifications(plain)
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", batchID, err)
	}
	return ns, nil
}

// openFast opens a payload of sealed members exactly as appendMember writes
// them into the JSON array of their notifications. Any other form makes it
// give up (ok false) before it opens anything.
func (p payloads) openFast(b, data []byte) (plain []byte, ok bool, err error) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false, nil
	}
	var sealed [][]byte
	for i := 1; i < len(b)-1; {
		if len(sealed) > 0 {
			if b[i] != ',' {
				return nil, false, nil
			}
			i++
		}
		if !bytes.HasPrefix(b[i:], []byte(sealedPrefix)) {
			return nil, false, nil
		}
		i += len(sealedPrefix)
		end := bytes.IndexByte(b[i:], '"')
		if end < 0 {
			return nil, false, nil
		}
		sealed = append(sealed, b[i:i+end])
		i += end + 1
		if rest := []byte(`,"notificationId":"`); bytes.HasPrefix(b[i:], rest) {
			if i = skipString(b, i+len(rest)); i < 0 {
				return nil, false, nil
			}
		}
		if i >= len(b) || b[i] != '}' {
			return nil, false, nil
		}
		i++
	}
	out := make([]byte, 1, len(b))
	out[0] = '['
	for i, s := range sealed {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = p.appendOpened(out, s, data); err != nil {
			return nil, true, err
		}
	}
	return append(out, ']'), true, nil
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

// openAny reads any JSON array of members, sealed or written before
// sealing, into the JSON array of their notifications.
func (p payloads) openAny(b, data []byte) ([]byte, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("decode members: %w", err)
	}
	out := []byte{'['}
	for i, m := range raw {
		if i > 0 {
			out = append(out, ',')
		}
		var member struct {
			Sealed *string `json:"sealed"`
		}
		if err := json.Unmarshal(m, &member); err != nil {
			return nil, fmt.Errorf("decode members: %w", err)
		}
		if member.Sealed == nil {
			out = append(out, m...)
			continue
		}
		var err error
		if out, err = p.appendOpened(out, []byte(*member.Sealed), data); err != nil {
			return nil, err
		}
	}
	return append(out, ']'), nil
}

// appendOpened appends the notification JSON sealed holds.
func (p payloads) appendOpened(out, sealed, data []byte) ([]byte, error) {
	out, err := p.keys.Open(out, sealed, data)
	if err != nil {
		return nil, err
	}
	return out, nil
}
