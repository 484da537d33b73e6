package contract_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
)

// TestStoredNotificationsRoundTrip: what AppendNotifications writes,
// DecodeNotifications reads back unchanged, and writing it again gives the
// same bytes; optional fields stay absent.
func TestStoredNotificationsRoundTrip(t *testing.T) {
	on, off := true, false
	ns := []contract.Notification{
		{Seq: 0, Epoch: "e", Source: contract.SourceTerminalBell, Title: "t"},
		{NotificationID: "n \"1\"", Seq: contract.MaxSafeInteger, Epoch: "e\u2028", Source: contract.SourcePlugin,
			Sound: &off, Kind: contract.KindAlert, ExpiresAt: 1_800_000_000_000, AgentState: contract.AgentNeedsInput,
			Title: "<b>&</b> 😀", Body: "line\nbreak\u0001", WorktreeID: "w",
			PaneKey: "e2e1:\"pane\"\n😀", ExecutionHost: "runtime:env%201"},
		{Seq: 4, Epoch: "e", Source: contract.SourcePlugin, Title: "t", ExecutionHost: "runtime:h"},
		{Seq: 5, Epoch: "e", Source: contract.SourcePlugin, Title: "t", Urgency: contract.UrgencyNormal},
		{Seq: 6, Epoch: "e", Source: contract.SourcePlugin, Title: "t", ExecutionHost: "runtime:h", Urgency: contract.UrgencyHigh},
		{NotificationID: "n2", Seq: 3, Epoch: "e", Source: contract.SourceAgentTaskComplete, Sound: &on,
			Kind: contract.KindDismiss, AgentState: contract.AgentFinished, Title: "t", Body: "b"},
	}
	payload := contract.AppendNotifications(nil, ns)
	got, err := contract.DecodeNotifications(nil, payload)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ns, got); diff != "" {
		t.Fatalf("DecodeNotifications (-want +got):\n%s", diff)
	}
	if again := contract.AppendNotifications(nil, got); string(again) != string(payload) {
		t.Fatalf("re-encoded payload differs:\n%s\n%s", payload, again)
	}
	// A row stored before urgency existed reads as absent: high.
	olderRow := `[{"notificationId":"n1","notificationSeq":1,"notificationEpoch":"e","source":"plugin","agentState":null,"title":"t","body":"","executionHost":"runtime:h"}]`
	if got, err := contract.DecodeNotifications(nil, []byte(olderRow)); err != nil || len(got) != 1 || got[0].Urgency != "" ||
		got[0].EffectiveUrgency() != contract.UrgencyHigh || got[0].ExecutionHost != "runtime:h" {
		t.Errorf("DecodeNotifications(older row) = %+v, %v", got, err)
	}
	for _, bad := range []string{``, `{}`, `[1]`, `["x"]`, `[{"notificationSeq":"1"}]`} {
		if _, err := contract.DecodeNotifications(nil, []byte(bad)); err == nil {
			t.Errorf("DecodeNotifications(%q) = nil error", bad)
		}
	}
}

// TestDecodeAppends: both decoders append to dst and leave it as it was on
// error, in their scan and in their encoding/json fallback.
func TestDecodeAppends(t *testing.T) {
	first := contract.Notification{NotificationID: "first", Seq: 1, Epoch: "e", Source: contract.SourcePlugin, Title: "t"}
	second := contract.Notification{NotificationID: "second", Seq: 2, Epoch: "e", Source: contract.SourcePlugin,
		Title: "t", Body: "b", Urgency: contract.UrgencyNormal}
	canonical := contract.AppendNotifications(nil, []contract.Notification{second})
	other := []byte(" " + string(canonical)) // read by the fallback
	summary := contract.Notification{NotificationID: "second", Seq: 2, Epoch: "e", Urgency: contract.UrgencyNormal}
	for _, tt := range []struct {
		name string
		dec  func([]contract.Notification, []byte) ([]contract.Notification, error)
		want contract.Notification
	}{
		{"DecodeNotifications", contract.DecodeNotifications, second},
		{"DecodeSummaries", contract.DecodeSummaries, summary},
	} {
		for _, payload := range [][]byte{canonical, other} {
			got, err := tt.dec([]contract.Notification{first}, payload)
			if diff := cmp.Diff([]contract.Notification{first, tt.want}, got); err != nil || diff != "" {
				t.Errorf("%s(dst, %s) = %v (-want +got):\n%s", tt.name, payload, err, diff)
			}
		}
		for _, bad := range []string{`[1]`, `[{"notificationSeq":"1"}]`, string(canonical) + ","} {
			got, err := tt.dec([]contract.Notification{first}, []byte(bad))
			if err == nil || len(got) != 1 || got[0].NotificationID != "first" {
				t.Errorf("%s(dst, %q) = %+v, %v; want dst as it was and an error", tt.name, bad, got, err)
			}
		}
	}
}
