package contract_test

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
)

func TestDecodeSendRequest(t *testing.T) {
	for _, tt := range contracttest.Sends() {
		t.Run(tt.Name, func(t *testing.T) {
			_, err := contract.DecodeSendRequest([]byte(tt.Body))
			if tt.OK && err != nil {
				t.Fatalf("DecodeSendRequest = %v, want nil", err)
			}
			if !tt.OK && !errors.Is(err, contract.ErrInvalidRequest) {
				t.Fatalf("DecodeSendRequest = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestSendDeduplicatesInOrder(t *testing.T) {
	body := strings.Replace(contracttest.SendJSON(""), `["r1"]`, `["b","a","b","c","a"]`, 1)
	req, err := contract.DecodeSendRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(req.RegistrationIDs, ","); got != "b,a,c" {
		t.Fatalf("RegistrationIDs = %q, want %q", got, "b,a,c")
	}
}

func TestFingerprintFormNormalisesKind(t *testing.T) {
	a, _ := contract.DecodeSendRequest([]byte(contracttest.SendJSON(`"sound":true`)))
	b, _ := contract.DecodeSendRequest([]byte(contracttest.SendJSON(`"kind":"alert","sound":false`)))
	fa, fb := a.Notification.AppendJSON(nil, false), b.Notification.AppendJSON(nil, false)
	if string(fa) != string(fb) {
		t.Fatalf("fingerprint forms differ:\n%s\n%s", fa, fb)
	}
}

// TestNotificationJSON pins the schema key order AppendJSON writes: Gen B's
// keys as before, then paneKey and executionHost; absent, they write
// nothing, so an older desktop's notification keeps its bytes.
func TestNotificationJSON(t *testing.T) {
	f := false
	n := contract.Notification{NotificationID: "n1", Seq: 2, Epoch: "e", Source: contract.SourcePlugin, Sound: &f,
		ExpiresAt: 5, AgentState: contract.AgentFinished, Title: "t", Body: "b", WorktreeID: "w"}
	older := `{"notificationId":"n1","notificationSeq":2,"notificationEpoch":"e","source":"plugin","sound":false,` +
		`"expiresAt":5,"agentState":"finished","title":"t","body":"b","worktreeId":"w"}`
	if got := string(n.AppendJSON(nil, true)); got != older {
		t.Errorf("AppendJSON without Gen D fields = %s, want %s", got, older)
	}
	n.PaneKey, n.ExecutionHost = "e2e1:AA==", "runtime:h"
	want := strings.TrimSuffix(older, "}") + `,"paneKey":"e2e1:AA==","executionHost":"runtime:h"}`
	if got := string(n.AppendJSON(nil, true)); got != want {
		t.Errorf("AppendJSON = %s, want %s", got, want)
	}
	fp := `{"notificationId":"n1","notificationSeq":2,"notificationEpoch":"e","source":"plugin","kind":"alert",` +
		`"expiresAt":5,"agentState":"finished","title":"t","body":"b","worktreeId":"w",` +
		`"paneKey":"e2e1:AA==","executionHost":"runtime:h"}`
	if got := string(n.AppendJSON(nil, false)); got != fp {
		t.Errorf("fingerprint form = %s, want %s", got, fp)
	}
}

// TestFingerprintFormHoldsGenDFields: another paneKey or executionHost is
// other content; the fields decode into the notification.
func TestFingerprintFormHoldsGenDFields(t *testing.T) {
	decode := func(fields string) contract.Notification {
		t.Helper()
		req, err := contract.DecodeSendRequest([]byte(contracttest.SendJSON(fields)))
		if err != nil {
			t.Fatal(err)
		}
		return req.Notification
	}
	base := decode(`"paneKey":"e2e1:AAAA","executionHost":"runtime:a"`)
	if base.PaneKey != "e2e1:AAAA" || base.ExecutionHost != "runtime:a" {
		t.Fatalf("decoded paneKey %q, executionHost %q", base.PaneKey, base.ExecutionHost)
	}
	for _, other := range []string{
		`"paneKey":"e2e1:AAAB","executionHost":"runtime:a"`,
		`"paneKey":"e2e1:AAAA","executionHost":"runtime:b"`,
		`"paneKey":"e2e1:AAAA"`,
		`"executionHost":"runtime:a"`,
		``,
	} {
		if n := decode(other); string(n.AppendJSON(nil, false)) == string(base.AppendJSON(nil, false)) {
			t.Errorf("fingerprint form of {%s} equals {paneKey e2e1:AAAA, executionHost runtime:a}", other)
		}
	}
}

func TestSealedPaneKey(t *testing.T) {
	tests := []struct {
		paneKey string
		want    bool
	}{
		{"e2e1:", true}, {"e2e1:AAAA", true}, {"", false}, {"e2e1", false}, {"E2E1:AAAA", false},
		{" e2e1:AAAA", false}, {"e2e2:AAAA", false}, {"pane-1", false},
	}
	for _, tt := range tests {
		if got := contract.SealedPaneKey(tt.paneKey); got != tt.want {
			t.Errorf("SealedPaneKey(%q) = %v, want %v", tt.paneKey, got, tt.want)
		}
		n := contract.Notification{PaneKey: tt.paneKey}
		if got := n.Sealed(); got != tt.want {
			t.Errorf("Notification{PaneKey: %q}.Sealed() = %v, want %v", tt.paneKey, got, tt.want)
		}
	}
}
