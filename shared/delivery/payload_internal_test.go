package delivery

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/seal/sealtest"
)

// boundAlert is an alert with notificationId id.
func boundAlert(id string) contract.Notification {
	return contract.Notification{NotificationID: id, Seq: 1, Epoch: "epoch-1", Source: "agent-task-complete",
		AgentState: "finished", Title: "Task finished", Body: "Agent done"}
}

// TestMemberSealBindsEveryClearField: a member sealed into batch "b" of
// registration "r" opens only there and only with the notificationId stored
// beside it: another batch of the same registration, another registration,
// an edited, removed or added clear id, a stripped version prefix (the
// additional data of the members sealed before it) and a field added in the
// clear all leave it unopenable (seal.ErrUnopenable). The clear id is
// changed to one the seal's own check would catch and to one only the
// additional data catches (sealed without one).
func TestMemberSealBindsEveryClearField(t *testing.T) {
	p := payloads{sealtest.Ring(t)}
	with := p.encode("b", "r", []contract.Notification{boundAlert("a")})
	without := p.encode("b", "r", []contract.Notification{boundAlert("")})
	for _, payload := range []string{with, without} {
		if _, err := p.decode("b", "r", payload, false); err != nil {
			t.Fatalf("decode(%s) = %v, want it to open", payload, err)
		}
	}
	tests := []struct {
		name         string
		payload      string
		batch, reg   string
		wantAD       bool // the additional data is what fails, not the check of the id
		wantClearErr error
	}{
		{name: "another batch", payload: with, batch: "c", reg: "r", wantAD: true},
		{name: "another registration", payload: with, batch: "b", reg: "s", wantAD: true},
		{name: "clear id edited", payload: strings.Replace(with, `"notificationId":"a"`, `"notificationId":"z"`, 1),
			batch: "b", reg: "r", wantAD: true},
		{name: "clear id removed", payload: strings.Replace(with, `,"notificationId":"a"`, ``, 1),
			batch: "b", reg: "r", wantAD: true},
		{name: "clear id added", payload: strings.Replace(without, `"}`, `","notificationId":"a"}`, 1),
			batch: "b", reg: "r", wantAD: true},
		{name: "clear id escaped", payload: strings.Replace(with, `"notificationId":"a"`, `"notificationId":"\u0061"`, 1),
			batch: "b", reg: "r", wantAD: true},
		{name: "version stripped", payload: strings.Replace(with, `"sealed":"v2.`, `"sealed":"`, 1),
			batch: "b", reg: "r", wantAD: true},
		{name: "field added in the clear", payload: strings.Replace(with, `"}`, `","kind":"dismiss"}`, 1),
			batch: "b", reg: "r", wantClearErr: errClearField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.decode(tt.batch, tt.reg, tt.payload, true)
			if !errors.Is(err, seal.ErrUnopenable) {
				t.Fatalf("decode(%q, %q, %s) = %v, want seal.ErrUnopenable", tt.batch, tt.reg, tt.payload, err)
			}
			if tt.wantAD && errors.Is(err, errClearID) {
				t.Errorf("decode(%q, %q, %s) = %v: the check of the id caught it, want the additional data to", tt.batch, tt.reg, tt.payload, err)
			}
			if tt.wantClearErr != nil && !errors.Is(err, tt.wantClearErr) {
				t.Errorf("decode(%q, %q, %s) = %v, want %v", tt.batch, tt.reg, tt.payload, err, tt.wantClearErr)
			}
		})
	}
}

// v1Member is n sealed as a member of batch batchID of registration reg
// was before the additional data covered its notificationId, with clearID
// stored beside it.
func v1Member(keys *seal.Ring, batchID, reg string, n contract.Notification, clearID string) string {
	m := `{"sealed":"` + string(keys.Seal(nil, n.AppendJSON(nil, true), adV1(nil, batchID, reg))) + `"`
	if clearID != "" {
		m += `,"notificationId":` + string(contract.AppendJSString(nil, clearID))
	}
	return m + "}"
}

// TestOlderSealsOpenWithTheirIDChecked: members sealed under the previous
// additional data (batch and registration only) still open, beside members
// sealed now, but only with the clear notificationId they seal: the
// check of the id holds them where their additional data does not.
func TestOlderSealsOpenWithTheirIDChecked(t *testing.T) {
	keys := sealtest.Ring(t)
	p := payloads{keys}
	joined := p.encode("b", "r", []contract.Notification{boundAlert("new")})
	old := v1Member(keys, "b", "r", boundAlert("old"), "old")
	ns, err := p.decode("b", "r", "["+old+","+joined[1:], false)
	if err != nil || len(ns) != 2 || ns[0].NotificationID != "old" || ns[1].NotificationID != "new" {
		t.Fatalf("decode(older seal, newer seal) = %+v, %v; want both", ns, err)
	}
	tests := []struct{ name, member string }{
		{"clear id edited", v1Member(keys, "b", "r", boundAlert("old"), "else")},
		{"clear id removed", v1Member(keys, "b", "r", boundAlert("old"), "")},
		{"clear id added", v1Member(keys, "b", "r", boundAlert(""), "else")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := p.decode("b", "r", "["+tt.member+"]", true); !errors.Is(err, errClearID) || !errors.Is(err, seal.ErrUnopenable) {
				t.Fatalf("decode(%s) = %v, want errClearID (seal.ErrUnopenable)", tt.member, err)
			}
		})
	}
}

// TestPlainMembersOnlyWhereAllowed: a member in the clear is read only when
// the batch may hold one (store.PlainMembers), and refused as unopenable
// otherwise, beside sealed members too.
func TestPlainMembersOnlyWhereAllowed(t *testing.T) {
	p := payloads{sealtest.Ring(t)}
	plain := string(contract.AppendNotifications(nil, []contract.Notification{boundAlert("old")}))
	sealed := p.encode("b", "r", []contract.Notification{boundAlert("new")})
	mixed := plain[:len(plain)-1] + "," + sealed[1:]
	for _, payload := range []string{plain, mixed} {
		if ns, err := p.decode("b", "r", payload, true); err != nil || len(ns) != strings.Count(payload, `"notificationId"`) {
			t.Errorf("decode(%s, plain allowed) = %+v, %v; want every member", payload, ns, err)
		}
		if _, err := p.decode("b", "r", payload, false); !errors.Is(err, errPlainMember) || !errors.Is(err, seal.ErrUnopenable) {
			t.Errorf("decode(%s, plain refused) = %v, want errPlainMember (seal.ErrUnopenable)", payload, err)
		}
	}
}

// TestPreviousVersionLeavesNewSeals: the previous version opened a sealed
// member's whole text with Ring.Open; "v2.<key id>" is then a key id no
// ring holds (ids have no '.'), so an instance of that version leaves a
// batch sealed now for a newer instance (seal.ErrKeyNotHeld, rotation.go)
// instead of ending it as unopenable while an upgrade rolls out.
func TestPreviousVersionLeavesNewSeals(t *testing.T) {
	keys := sealtest.Ring(t)
	ms, ok := scanFast([]byte(payloads{keys}.encode("b", "r", []contract.Notification{boundAlert("a")})))
	if !ok || len(ms) != 1 {
		t.Fatalf("scanFast = %+v, %v; want one member", ms, ok)
	}
	if _, err := keys.Open(nil, ms[0].sealed, adV1(nil, "b", "r")); !errors.Is(err, seal.ErrKeyNotHeld) {
		t.Fatalf("Open(%s) under the previous version = %v, want seal.ErrKeyNotHeld", ms[0].sealed, err)
	}
}
