package pushtest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
)

// Host is the host fingerprint of every case.
const Host = "AbCdEfGhIjKlMnOp"

// Now is the clock reading (epoch ms) the cases are built at; Deadline is
// a fresh event's deadline, EventLifetime later.
const (
	Now      int64 = 1_800_000_000_000
	Deadline       = Now + int64(contract.EventLifetime/time.Millisecond)
)

// Case is one golden payload case.
type Case struct {
	// Name names the golden file: testdata/<Name>.golden.
	Name    string
	Members []contract.Notification
	// Badge is the badge delivery stamps on the message; 0 for none.
	Badge int64
}

// Message builds the case's message at Deadline, with its badge.
func (c Case) Message() push.Message {
	m := push.Build(Host, c.Members, Deadline)
	m.Badge = c.Badge
	return m
}

// Sealed content of the sealed cases, as today's desktop makes it (issue
// "Today's Orca desktops and phones"): opaque per-phone id and epoch, and a
// paneKey carrying a NaCl secretbox the gateway cannot open.
const (
	SealedID      = "e2e1.yMG6s6ylnpeQiYJ7dG1mX1hRSkM8NS4n"
	SealedEpoch   = "e2e1.ERwnMj1IU15pdH-KlaCrtsHM1-Lt-AMO"
	SealedPaneKey = "e2e1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXzu8hGSz/48XNQZw0SIWhHrYDCG8Rv0enC0QfHaqk+4SC4TrR5mP+r9LzboHZQCUCecCIFUDiHuj3fjWCcXYxFTlbiBQyKm5Q85/X8aX8rG0nHZI61COBqb1mG6eDbw=="
	ExecutionHost = "runtime:env%201"
)

// Cases returns the payload cases every provider pins (issue 4): a single
// alert, a silent alert, a summary of 3 with needs-input, a summary of 2
// updates, a dismissal, and an alert without an id; then Gen D's: an alert
// with an (unsealed) paneKey and an executionHost, a sealed alert, a silent
// sealed alert and a sealed dismissal, each with both fields; then the
// urgency cases (urgencyCases) and the badge cases (badgeCases).
func Cases() []Case {
	f := false
	alert := contract.Notification{
		NotificationID: "n-1", Seq: 7, Epoch: "epoch-1",
		Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished,
		Title: `Build "main" finished`, Body: "All 112 tests passed <ok> & done ✓ 🎉",
		WorktreeID: "wt-main",
	}
	silent := alert
	silent.Sound = &f
	silent.AgentState = contract.AgentNeedsInput
	member := func(id string, seq int64, state contract.AgentState) contract.Notification {
		n := alert
		n.NotificationID, n.Seq, n.AgentState = id, seq, state
		n.WorktreeID = "wt-" + id
		return n
	}
	dismiss := alert
	dismiss.Kind, dismiss.Seq = contract.KindDismiss, 8
	bell := contract.Notification{
		Seq: 3, Epoch: "epoch-1", Source: contract.SourceTerminalBell,
		Title: "Terminal bell", Body: "tab 2",
	}
	return append([]Case{
		{Name: "single_alert", Members: []contract.Notification{alert}},
		{Name: "silent_alert", Members: []contract.Notification{silent}},
		{Name: "summary_needs_input", Members: []contract.Notification{
			member("a", 1, contract.AgentFinished),
			member("b", 2, contract.AgentNeedsInput),
			member("c", 3, ""),
		}},
		{Name: "summary_updates", Members: []contract.Notification{
			member("a", 1, contract.AgentFinished),
			member("b", 2, ""),
		}},
		{Name: "dismissal", Members: []contract.Notification{dismiss}},
		{Name: "alert_without_id", Members: []contract.Notification{bell}},
	}, slices.Concat(genDCases(alert), urgencyCases(alert, member, dismiss), badgeCases(alert, member, dismiss))...)
}

// badgeCases are the cases with a badge (issue "What the phone shows"): an
// alert, a silent summary of three, and a dismissal, which carries none
// whatever delivery stamps.
func badgeCases(alert contract.Notification, member func(string, int64, contract.AgentState) contract.Notification,
	dismiss contract.Notification) []Case {
	f := false
	silent := member("c", 3, "")
	silent.Sound = &f
	return []Case{
		{Name: "badged_alert", Members: []contract.Notification{alert}, Badge: 7},
		{Name: "badged_summary", Members: []contract.Notification{
			member("a", 1, contract.AgentFinished), member("b", 2, contract.AgentNeedsInput), silent}, Badge: 99999 + 3},
		{Name: "badged_dismissal", Members: []contract.Notification{dismiss}, Badge: 4},
	}
}

// urgencyCases are the cases with an urgency (issue "What the phone
// shows"): a normal alert (APNs priority 5, FCM normal), a summary of two
// normal members (normal), a summary of a normal and an explicitly high
// member (high, the most urgent member's), and a normal dismissal (a
// dismissal's own priority).
func urgencyCases(alert contract.Notification, member func(string, int64, contract.AgentState) contract.Notification,
	dismiss contract.Notification) []Case {
	normal := func(n contract.Notification) contract.Notification {
		n.Urgency = contract.UrgencyNormal
		return n
	}
	high := member("b", 2, contract.AgentNeedsInput)
	high.Urgency = contract.UrgencyHigh
	return []Case{
		{Name: "normal_alert", Members: []contract.Notification{normal(alert)}},
		{Name: "summary_normal", Members: []contract.Notification{
			normal(member("a", 1, contract.AgentFinished)),
			normal(member("b", 2, "")),
		}},
		{Name: "summary_mixed_urgency", Members: []contract.Notification{
			normal(member("a", 1, contract.AgentFinished)),
			high,
			normal(member("c", 3, "")),
		}},
		{Name: "normal_dismissal", Members: []contract.Notification{normal(dismiss)}},
	}
}

// genDCases are the cases with Gen D's fields, built from alert.
func genDCases(alert contract.Notification) []Case {
	f := false
	pane := alert
	pane.PaneKey, pane.ExecutionHost = "pane-3f1c2a9e", ExecutionHost
	sealed := contract.Notification{
		NotificationID: SealedID, Seq: 11, Epoch: SealedEpoch,
		Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentNeedsInput,
		Title: "Agent needs input", Body: "", WorktreeID: "wt-main",
		PaneKey: SealedPaneKey, ExecutionHost: ExecutionHost,
	}
	silentSealed := sealed
	silentSealed.Sound, silentSealed.Title, silentSealed.AgentState = &f, "Agent finished", contract.AgentFinished
	sealedDismiss := sealed
	sealedDismiss.Kind, sealedDismiss.Seq = contract.KindDismiss, 12
	return []Case{
		{Name: "alert_with_pane", Members: []contract.Notification{pane}},
		{Name: "sealed_alert", Members: []contract.Notification{sealed}},
		{Name: "silent_sealed_alert", Members: []contract.Notification{silentSealed}},
		{Name: "sealed_dismissal", Members: []contract.Notification{sealedDismiss}},
	}
}

// Golden compares got with testdata/<name>.golden, or rewrites the file
// when update is set (the -update flag of the calling test).
func Golden(t *testing.T, update bool, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s mismatch (-want +got):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}
