package push_test

import (
	"bytes"
	"flag"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestBuildGolden pins each case's texts, collapse id and orca fields.
func TestBuildGolden(t *testing.T) {
	for _, c := range pushtest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			m := c.Message()
			var b bytes.Buffer
			fmt.Fprintf(&b, "kind: %s\ntitle: %q\nbody: %q\nsilent: %t\ncollapseId: %s\ndeadline: %d\n",
				m.Kind, m.Title, m.Body, m.Silent, m.CollapseID, m.Deadline)
			if m.Sealed { // only then, so the older cases' files stay as they were
				fmt.Fprintf(&b, "sealed: %t\n", m.Sealed)
			}
			if m.Urgency != "" { // likewise
				fmt.Fprintf(&b, "urgency: %s\n", m.Urgency)
			}
			if m.Badge != 0 { // likewise
				fmt.Fprintf(&b, "badge: %d\n", m.Badge)
			}
			for _, f := range m.OrcaFields() {
				fmt.Fprintf(&b, "orca.%s (%s): %s\n", f.Key, f.Type, f.Value)
			}
			pushtest.Golden(t, *update, "build_"+c.Name, b.Bytes())
		})
	}
}

// TestCollapseID checks ids against sha256(JSON.stringify(...)) computed
// with Node.js, so they match the original gateway's (reference §5.4).
func TestCollapseID(t *testing.T) {
	const fp = pushtest.Host
	alert := func(id, epoch string, seq int64) contract.Notification {
		return contract.Notification{NotificationID: id, Epoch: epoch, Seq: seq,
			Source: contract.SourcePlugin, Title: "t"}
	}
	tests := []struct {
		name    string
		members []contract.Notification
		want    string
	}{
		{"single", []contract.Notification{alert("n-1", "e", 5)},
			"55ef13e6f6d172a30afb4da4c3f55419c1b630a1ee1186c597f502fbb28898a6"},
		{"single escapes like JSON.stringify", []contract.Notification{alert(`q"<&>\~`, "e", 5)},
			"9337ce44cf0d5f444f4bd9914675b89712abd70501c48c0a43332e1a9c30f2c1"},
		{"summary of 3", []contract.Notification{alert("a", "epoch-1", 1), alert("b", "epoch-1", 2), alert("c", "epoch-1", 3)},
			"8751b66523ddad408c82e69a6a5a87309e6fa55cd4d66d42a63ada3710691bc6"},
		{"summary escapes like JSON.stringify", []contract.Notification{
			alert(`x\y`, "e\n😀\u2028", contract.MaxSafeInteger), alert("<id>", "é", 0)},
			"87cee93bf504fdd293bfd62e28eb038966b1a963b727a93afc28ce64e76c7517"},
		{"no id", []contract.Notification{alert("", "e", 1)}, "host:" + fp},
		{"count > 1 without members", []contract.Notification{alert("a", "e", 1), alert("", "e", 2)}, "host:" + fp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := push.Build(fp, tt.members, 1).CollapseID; got != tt.want {
				t.Errorf("Build(...).CollapseID = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	f := false
	n := func(id string, seq int64, state contract.AgentState) contract.Notification {
		return contract.Notification{NotificationID: id, Seq: seq, Epoch: "e", Source: contract.SourcePlugin,
			AgentState: state, Title: "title " + id, Body: "body " + id, WorktreeID: "w" + id}
	}
	latestSilent := n("b", 2, "")
	latestSilent.Sound = &f
	dismiss := n("a", 3, "")
	dismiss.Kind = contract.KindDismiss
	noID := n("", 4, contract.AgentNeedsInput)

	tests := []struct {
		name    string
		members []contract.Notification
		want    push.Message
	}{
		{
			name:    "single keeps its text",
			members: []contract.Notification{n("a", 1, contract.AgentFinished)},
			want: push.Message{Kind: contract.KindAlert, Title: "title a", Body: "body a", WorktreeID: "wa",
				NotificationID: "a", NotificationSeq: 1, AgentState: contract.AgentFinished, CoalescedCount: 1},
		},
		{
			name:    "summary uses the latest member's fields and sound",
			members: []contract.Notification{n("a", 1, contract.AgentFinished), latestSilent},
			want: push.Message{Kind: contract.KindAlert, Title: "Orca", Body: "2 updates", Silent: true, WorktreeID: "wb",
				NotificationID: "b", NotificationSeq: 2, CoalescedCount: 2,
				SummaryMembers: []push.Member{{"a", "e", 1}, {"b", "e", 2}}},
		},
		{
			name:    "needs-input anywhere",
			members: []contract.Notification{n("a", 1, contract.AgentNeedsInput), n("b", 2, ""), n("c", 3, contract.AgentFinished)},
			want: push.Message{Kind: contract.KindAlert, Title: "Orca", Body: "3 agents need attention", WorktreeID: "wc",
				NotificationID: "c", NotificationSeq: 3, AgentState: contract.AgentFinished, CoalescedCount: 3,
				SummaryMembers: []push.Member{{"a", "e", 1}, {"b", "e", 2}, {"c", "e", 3}}},
		},
		{
			name:    "a member without id: no summaryMembers",
			members: []contract.Notification{n("a", 1, ""), noID},
			want: push.Message{Kind: contract.KindAlert, Title: "Orca", Body: "2 agents need attention", WorktreeID: "w",
				NotificationSeq: 4, AgentState: contract.AgentNeedsInput, CoalescedCount: 2},
		},
		{
			name:    "dismissal",
			members: []contract.Notification{dismiss},
			want: push.Message{Kind: contract.KindDismiss, Title: "title a", Body: "body a", WorktreeID: "wa",
				NotificationID: "a", NotificationSeq: 3, CoalescedCount: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := push.Build("fp", tt.members, 42)
			tt.want.HostFingerprint, tt.want.Deadline = "fp", 42
			tt.want.NotificationEpoch, tt.want.Source = "e", contract.SourcePlugin
			got.CollapseID = "" // TestCollapseID covers it
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Build mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanSummarize(t *testing.T) {
	with := func(k int, edit func(*contract.Notification)) []contract.Notification {
		ms := make([]contract.Notification, k)
		for i := range ms {
			ms[i] = contract.Notification{NotificationID: fmt.Sprint("id", i), Epoch: "e", Title: "t"}
		}
		if edit != nil && k > 0 {
			edit(&ms[k-1])
		}
		return ms
	}
	tests := []struct {
		name    string
		members []contract.Notification
		want    bool
	}{
		{"one", with(1, nil), false},
		{"two", with(contract.MinSummaryMembers, nil), true},
		{"32", with(contract.MaxBatchMembers, nil), true},
		{"33", with(contract.MaxBatchMembers+1, nil), false},
		{"a member without id", with(3, func(n *contract.Notification) { n.NotificationID = "" }), false},
		{"a dismissal", with(3, func(n *contract.Notification) { n.Kind = contract.KindDismiss }), false},
		{"explicit alert kind", with(3, func(n *contract.Notification) { n.Kind = contract.KindAlert }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := push.CanSummarize(tt.members); got != tt.want {
				t.Errorf("CanSummarize(%d members) = %t, want %t", len(tt.members), got, tt.want)
			}
		})
	}
}

func TestOrcaFields(t *testing.T) {
	m := push.Message{Kind: contract.KindDismiss, HostFingerprint: "fp", NotificationID: "a", NotificationSeq: 9,
		NotificationEpoch: "e", Source: contract.SourcePlugin, CoalescedCount: 1}
	want := []push.Field{
		{Key: "kind", Type: push.FieldString, Value: "dismiss"},
		{Key: "hostFingerprint", Type: push.FieldString, Value: "fp"},
		{Key: "notificationId", Type: push.FieldString, Value: "a"},
		{Key: "notificationSeq", Type: push.FieldNumber, Value: "9"},
		{Key: "notificationEpoch", Type: push.FieldString, Value: "e"},
		{Key: "source", Type: push.FieldString, Value: "plugin"},
		{Key: "agentState", Type: push.FieldNull},
		{Key: "coalescedCount", Type: push.FieldNumber, Value: "1"},
	}
	if diff := cmp.Diff(want, m.OrcaFields()); diff != "" {
		t.Errorf("OrcaFields mismatch (-want +got):\n%s", diff)
	}
	m.SummaryMembers = []push.Member{{"a", `"e"`, 1}}
	got := m.OrcaFields()
	if last := got[len(got)-1]; last != (push.Field{Key: "summaryMembers", Type: push.FieldJSON,
		Value: `[{"notificationId":"a","notificationEpoch":"\"e\"","notificationSeq":1}]`}) {
		t.Errorf("summaryMembers field = %+v", last)
	}
}
