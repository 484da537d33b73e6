package contract_test

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
)

func notificationJSON(fields string) string {
	base := `"notificationSeq":1,"notificationEpoch":"e1","source":"agent-task-complete","agentState":null,"title":"t","body":""`
	if fields != "" {
		base += "," + fields
	}
	return `{"v":1,"registrationIds":["r1"],"notification":{` + base + `}}`
}

func sendCases() []struct {
	name string
	body string
	ok   bool
} {
	long := func(n int, s string) string { return strings.Repeat(s, n) }
	return []struct {
		name string
		body string
		ok   bool
	}{
		{"minimal", notificationJSON(""), true},
		{"full", notificationJSON(`"notificationId":"n1","sound":false,"kind":"alert","expiresAt":1,"worktreeId":"w"`), true},
		{"dismissal", notificationJSON(`"notificationId":"n1","kind":"dismiss"`), true},
		{"title 80 astral units", strings.Replace(notificationJSON(""), `"title":"t"`, `"title":"`+long(40, "😀")+`"`, 1), true},
		{"title 81 units", strings.Replace(notificationJSON(""), `"title":"t"`, `"title":"`+long(40, "😀")+`a"`, 1), false},
		{"title empty", strings.Replace(notificationJSON(""), `"title":"t"`, `"title":""`, 1), false},
		{"body 180", strings.Replace(notificationJSON(""), `"body":""`, `"body":"`+long(180, "é")+`"`, 1), true},
		{"body 181", strings.Replace(notificationJSON(""), `"body":""`, `"body":"`+long(181, "b")+`"`, 1), false},
		{"id 2048", notificationJSON(`"notificationId":"` + long(2048, "%") + `"`), true},
		{"id 2049", notificationJSON(`"notificationId":"` + long(2049, "a") + `"`), false},
		{"id empty", notificationJSON(`"notificationId":""`), false},
		{"id newline", notificationJSON(`"notificationId":"a\nb"`), false},
		{"id tab", notificationJSON(`"notificationId":"a\tb"`), false},
		{"id nul", notificationJSON(`"notificationId":"a\u0000b"`), false},
		{"id non-ascii", notificationJSON(`"notificationId":"émoji"`), false},
		{"worktree 1100 wide", notificationJSON(`"worktreeId":"` + long(1100, "界") + `"`), false},
		{"worktree 2049", notificationJSON(`"worktreeId":"` + long(2049, "w") + `"`), false},
		{"worktree empty", notificationJSON(`"worktreeId":""`), false},
		{"worktree null", notificationJSON(`"worktreeId":null`), false},
		{"seq negative", strings.Replace(notificationJSON(""), `"notificationSeq":1`, `"notificationSeq":-1`, 1), false},
		{"seq fraction", strings.Replace(notificationJSON(""), `"notificationSeq":1`, `"notificationSeq":1.5`, 1), false},
		{"seq max safe", strings.Replace(notificationJSON(""), `"notificationSeq":1`, `"notificationSeq":9007199254740991`, 1), true},
		{"seq over max safe", strings.Replace(notificationJSON(""), `"notificationSeq":1`, `"notificationSeq":9007199254740993`, 1), false},
		{"seq string", strings.Replace(notificationJSON(""), `"notificationSeq":1`, `"notificationSeq":"1"`, 1), false},
		{"epoch empty", strings.Replace(notificationJSON(""), `"notificationEpoch":"e1"`, `"notificationEpoch":""`, 1), false},
		{"epoch 129", strings.Replace(notificationJSON(""), `"notificationEpoch":"e1"`, `"notificationEpoch":"`+long(129, "e")+`"`, 1), false},
		{"source unknown", strings.Replace(notificationJSON(""), `"agent-task-complete"`, `"email"`, 1), false},
		{"agent state missing", strings.Replace(notificationJSON(""), `"agentState":null,`, ``, 1), false},
		{"agent state unknown", strings.Replace(notificationJSON(""), `"agentState":null`, `"agentState":"working"`, 1), false},
		{"agent state needs input", strings.Replace(notificationJSON(""), `"agentState":null`, `"agentState":"needs-input"`, 1), true},
		{"sound string", notificationJSON(`"sound":"no"`), false},
		{"kind unknown", notificationJSON(`"kind":"update"`), false},
		{"dismissal without id", notificationJSON(`"kind":"dismiss"`), false},
		{"expires zero", notificationJSON(`"expiresAt":0`), false},
		{"expires negative", notificationJSON(`"expiresAt":-5`), false},
		{"unknown notification key", notificationJSON(`"paneKey":"p"`), false},
		{"unknown top key", strings.Replace(notificationJSON(""), `{"v":1,`, `{"v":1,"x":true,`, 1), false},
		{"no ids", strings.Replace(notificationJSON(""), `["r1"]`, `[]`, 1), false},
		{"21 copies of one id", strings.Replace(notificationJSON(""), `["r1"]`, `[`+strings.TrimSuffix(long(21, `"r1",`), ",")+`]`, 1), false},
		{"20 copies of one id", strings.Replace(notificationJSON(""), `["r1"]`, `[`+strings.TrimSuffix(long(20, `"r1",`), ",")+`]`, 1), true},
		{"id not string", strings.Replace(notificationJSON(""), `["r1"]`, `[1]`, 1), false},
		{"ids not array", strings.Replace(notificationJSON(""), `["r1"]`, `"r1"`, 1), false},
		{"notification missing", `{"v":1,"registrationIds":["r1"]}`, false},
	}
}

func TestDecodeSendRequest(t *testing.T) {
	for _, tt := range sendCases() {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.DecodeSendRequest([]byte(tt.body))
			if tt.ok && err != nil {
				t.Fatalf("DecodeSendRequest = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, contract.ErrInvalidRequest) {
				t.Fatalf("DecodeSendRequest = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestSendDeduplicatesInOrder(t *testing.T) {
	body := strings.Replace(notificationJSON(""), `["r1"]`, `["b","a","b","c","a"]`, 1)
	req, err := contract.DecodeSendRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(req.RegistrationIDs, ","); got != "b,a,c" {
		t.Fatalf("RegistrationIDs = %q, want %q", got, "b,a,c")
	}
}

func TestFingerprintFormNormalisesKind(t *testing.T) {
	a, _ := contract.DecodeSendRequest([]byte(notificationJSON(`"sound":true`)))
	b, _ := contract.DecodeSendRequest([]byte(notificationJSON(`"kind":"alert","sound":false`)))
	fa, fb := a.Notification.AppendJSON(nil, false), b.Notification.AppendJSON(nil, false)
	if string(fa) != string(fb) {
		t.Fatalf("fingerprint forms differ:\n%s\n%s", fa, fb)
	}
}
