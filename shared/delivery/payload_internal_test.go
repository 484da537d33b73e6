package delivery

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
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
	ms, ok := scanFast(payloads{keys}.encode("b", "r", []contract.Notification{boundAlert("a")}))
	if !ok || len(ms) != 1 {
		t.Fatalf("scanFast = %+v, %v; want one member", ms, ok)
	}
	if _, err := keys.Open(nil, []byte(ms[0].sealed), adV1(nil, "b", "r")); !errors.Is(err, seal.ErrKeyNotHeld) {
		t.Fatalf("Open(%s) under the previous version = %v, want seal.ErrKeyNotHeld", ms[0].sealed, err)
	}
}

// randomMember is a notification of any shape a batch can hold, with a
// notificationId most of the time.
func randomMember(r *rand.Rand, i int) contract.Notification {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	n := contract.Notification{Seq: r.Int64N(1 << 40), Epoch: pick("e1", "e2", "3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69"),
		Source:     contract.Source(pick(string(contract.SourcePlugin), string(contract.SourceAgentTaskComplete))),
		Kind:       contract.Kind(pick("", "", "", string(contract.KindAlert), string(contract.KindDismiss))),
		AgentState: contract.AgentState(pick("", string(contract.AgentFinished), string(contract.AgentNeedsInput))),
		Title:      pick("Task finished", "<b>\"x\"</b>", "é😀"), Body: strings.Repeat("b\n", r.IntN(40)),
		WorktreeID: pick("", "wt"), PaneKey: pick("", "pane", contract.SealedPaneKeyPrefix+"x"),
		ExecutionHost: pick("", contract.ExecutionHostPrefix+"h"),
		Urgency:       contract.Urgency(pick("", string(contract.UrgencyHigh), string(contract.UrgencyNormal)))}
	if r.IntN(8) > 0 {
		n.NotificationID = fmt.Sprintf("id-%d", i)
	}
	if r.IntN(2) == 0 {
		sound := r.IntN(2) == 0
		n.Sound = &sound
	}
	if r.IntN(2) == 0 {
		n.ExpiresAt = 1 + r.Int64N(1<<41)
	}
	return n
}

// TestSummariesBuildTheSameMessage: a join reads the open batch with
// summaries, which keeps only what a summary reads of the members before
// its latest; for batches of every shape, adding any latest member builds
// the same message (so the same decision: CanSummarize and fits read
// nothing else) as reading every field does. The members come with room
// for the one a join appends.
func TestSummariesBuildTheSameMessage(t *testing.T) {
	p := payloads{sealtest.Ring(t)}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		ns := make([]contract.Notification, 1+r.IntN(contract.MaxBatchMembers))
		for j := range ns {
			ns[j] = randomMember(r, j)
		}
		payload := p.encode("b", "r", ns)
		full, err := p.decode("b", "r", payload, false)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := p.summaries("b", "r", payload)
		if err != nil {
			t.Fatal(err)
		}
		if cap(sum) <= len(sum) {
			t.Fatalf("case %d: summaries of %d members have capacity %d, want room for one more", i, len(sum), cap(sum))
		}
		latest := randomMember(r, len(ns))
		want := push.Build("host", append(full, latest), 1000)
		got := push.Build("host", append(sum, latest), 1000)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: the message built from summaries differs (-full +summaries):\n%s", i, diff)
		}
		if push.CanSummarize(append(full, latest)) != push.CanSummarize(append(sum, latest)) {
			t.Fatalf("case %d: CanSummarize differs", i)
		}
	}
}

// TestUnopenableBeforeMalformed: a batch holding a member that opens under
// no key and a member in the clear that is no notification fails as
// unopenable, whichever stands first, as when the whole batch was opened
// before it was read.
func TestUnopenableBeforeMalformed(t *testing.T) {
	p := payloads{sealtest.Ring(t)}
	sealed := p.encode("b", "r", []contract.Notification{boundAlert("a")})
	unopenable := strings.TrimSuffix(strings.TrimPrefix(p.encode("other", "r", []contract.Notification{boundAlert("a")}), "["), "]")
	malformed := `{"notificationSeq":"one"}`
	for _, payload := range []string{
		"[" + malformed + "," + unopenable + "]",
		"[" + unopenable + "," + malformed + "]",
		"[" + malformed + "," + sealed[1:len(sealed)-1] + "," + unopenable + "]",
	} {
		if _, err := p.decode("b", "r", payload, true); !errors.Is(err, seal.ErrUnopenable) {
			t.Errorf("decode(%s) = %v, want seal.ErrUnopenable", payload, err)
		}
	}
	if _, err := p.decode("b", "r", "["+malformed+","+sealed[1:], true); err == nil || errors.Is(err, seal.ErrUnopenable) {
		t.Errorf("decode(malformed, sealed) = %v, want the decode's error", err)
	}
}

// TestMemberCap: memberCap leaves room for every member appendMember
// writes, so a join's payload is written once at its size.
func TestMemberCap(t *testing.T) {
	p := payloads{sealtest.Ring(t)}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 500 {
		n := randomMember(r, i)
		if i%3 == 0 {
			n.NotificationID = `id"with\quotes` + strings.Repeat(`"`, r.IntN(20))
		}
		plain := n.AppendJSON(nil, true)
		if got, room := len(p.appendMember(nil, "batch", "reg", &n, plain)), p.memberCap(&n, plain); got > room {
			t.Fatalf("appendMember wrote %d bytes for %+v, memberCap is %d", got, n, room)
		}
	}
}
