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

// TestUrgency: urgency decodes into the notification and is written last,
// as given; absent, it writes nothing (an older desktop's bytes). In the
// fingerprint form an omitted and an explicit high are the same content and
// normal is other content.
func TestUrgency(t *testing.T) {
	decode := func(fields string) contract.Notification {
		t.Helper()
		req, err := contract.DecodeSendRequest([]byte(contracttest.SendJSON(fields)))
		if err != nil {
			t.Fatal(err)
		}
		return req.Notification
	}
	absent, high, normal := decode(``), decode(`"urgency":"high"`), decode(`"urgency":"normal"`)
	if absent.Urgency != "" || high.Urgency != contract.UrgencyHigh || normal.Urgency != contract.UrgencyNormal {
		t.Fatalf("decoded urgencies %q, %q, %q", absent.Urgency, high.Urgency, normal.Urgency)
	}
	if absent.EffectiveUrgency() != contract.UrgencyHigh || normal.EffectiveUrgency() != contract.UrgencyNormal {
		t.Errorf("effective urgencies %q, %q", absent.EffectiveUrgency(), normal.EffectiveUrgency())
	}
	const older = `{"notificationSeq":1,"notificationEpoch":"e1","source":"agent-task-complete","agentState":null,"title":"t","body":""}`
	if got := string(absent.AppendJSON(nil, true)); got != older {
		t.Errorf("AppendJSON without urgency = %s, want %s", got, older)
	}
	if got, want := string(normal.AppendJSON(nil, true)), strings.TrimSuffix(older, "}")+`,"urgency":"normal"}`; got != want {
		t.Errorf("AppendJSON = %s, want %s", got, want)
	}
	if got, want := string(high.AppendJSON(nil, true)), strings.TrimSuffix(older, "}")+`,"urgency":"high"}`; got != want {
		t.Errorf("AppendJSON = %s, want %s", got, want)
	}
	fa, fh, fn := absent.AppendJSON(nil, false), high.AppendJSON(nil, false), normal.AppendJSON(nil, false)
	if string(fa) != string(fh) {
		t.Errorf("fingerprint forms of an omitted and an explicit high differ:\n%s\n%s", fa, fh)
	}
	if string(fa) == string(fn) {
		t.Errorf("fingerprint form of normal equals high's: %s", fn)
	}
}
