package standin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

const (
	keyID     = "KEY1234567"
	teamID    = "TEAM123456"
	iosToken  = "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff"
	fcmToken  = "fcm-token_0123456789:abcdefghijklmnopqrstuvwxyz"
	otherFCM  = "fcm-token_9876543210:abcdefghijklmnopqrstuvwxyz"
	sendPath  = "/v1/projects/" + contract.DefaultFCMProjectID + "/messages:send"
	validBody = `{"message":{"token":"%s","data":{"a":"1"},"android":{"priority":"high","ttl":"30s"}}}`
)

// mustStart starts a stand-in on a manual clock and returns both and the
// .p8 key it checks.
func mustStart(t *testing.T) (*standin.Server, *clock.Manual, []byte) {
	t.Helper()
	key, err := standin.GenerateAPNSKey()
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.UnixMilli(pushtest.Now))
	st, err := standin.Start(standin.Options{Clock: clk, APNSKey: key, APNSKeyID: keyID, APNSTeamID: teamID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, clk, key
}

// mustAPNS returns an apns client for st.
func mustAPNS(t *testing.T, st *standin.Server, clk clock.Clock, key []byte) *apns.Client {
	t.Helper()
	c, err := apns.New(apns.Options{Key: key, KeyID: keyID, TeamID: teamID, Clock: clk,
		SandboxURL: st.APNSURL(contract.APNSSandbox), ProductionURL: st.APNSURL(contract.APNSProduction), RootCAs: st.RootCAs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// postFCM posts body to the FCM stand-in at path and returns the status and
// the answer.
func postFCM(t *testing.T, st *standin.Server, path, body string) (int, http.Header, []byte) {
	t.Helper()
	url := strings.TrimSuffix(st.FCMEndpoint(), "/v1") + path
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test", "yes")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func sprintf(format, token string) string { return strings.Replace(format, "%s", token, 1) }

// TestInboxEntry pins an inbox entry's fields and JSON names (design.md,
// GET /_emulator/inbox).
func TestInboxEntry(t *testing.T) {
	st, _, _ := mustStart(t)
	body := sprintf(validBody, fcmToken)
	if status, _, _ := postFCM(t, st, sendPath+"?alt=json", body); status != 200 {
		t.Fatalf("status = %d, want 200", status)
	}
	in := st.Inbox()
	if len(in) != 1 {
		t.Fatalf("inbox holds %d entries, want 1", len(in))
	}
	got, err := json.Marshal(in[0])
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	json.Unmarshal(got, &v)
	headers := v["headers"].(map[string]any)
	if headers["x-test"] != "yes" || headers["content-type"] != "application/json" {
		t.Errorf("headers = %v, want lower-case names with string values", headers)
	}
	delete(v, "headers")
	var wantBody any
	json.Unmarshal([]byte(body), &wantBody)
	want := map[string]any{
		"provider": "fcm", "status": 200.0, "receivedAt": float64(pushtest.Now), "method": "POST",
		"path": sendPath, "host": "fcm.googleapis.com", "body": wantBody,
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("inbox entry mismatch (-want +got):\n%s", diff)
	}
}

// TestAPNSInbox: APNs entries name the environment's real host and hold no
// pseudo-headers.
func TestAPNSInbox(t *testing.T) {
	st, clk, key := mustStart(t)
	c := mustAPNS(t, st, clk, key)
	m := pushtest.Cases()[0].Message()
	for _, env := range []contract.APNSEnvironment{contract.APNSSandbox, contract.APNSProduction} {
		if o := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: iosToken, APNSEnvironment: env}, m); o.Kind != push.Sent {
			t.Fatalf("Send = %+v", o)
		}
	}
	in := st.Inbox()
	if len(in) != 2 || in[0].Host != standin.HostAPNSSandbox || in[1].Host != standin.HostAPNSProduction {
		t.Fatalf("inbox = %+v, want a sandbox then a production entry", in)
	}
	for k := range in[0].Headers {
		if strings.HasPrefix(k, ":") || k != strings.ToLower(k) {
			t.Errorf("header %q is a pseudo-header or not lower-case", k)
		}
	}
	if in[0].Provider != standin.APNS || in[0].Path != "/3/device/"+iosToken || !bytes.Equal(in[0].Body, apns.Body(m)) {
		t.Errorf("entry = %+v", in[0])
	}
}

// TestFaultOrder: the oldest matching fault with times left answers, and
// counts down; "*" matches every token.
func TestFaultOrder(t *testing.T) {
	st, _, _ := mustStart(t)
	faults := []standin.Fault{
		{Provider: standin.FCM, Token: fcmToken, Status: 500, Reason: "INTERNAL", Times: 2},
		{Provider: standin.FCM, Token: "*", Status: 404, Reason: "UNREGISTERED"},
		{Provider: standin.APNS, Token: "*", Status: 410, Reason: "Unregistered"},
	}
	for _, f := range faults {
		if err := st.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	for _, tok := range []string{otherFCM, fcmToken, fcmToken, fcmToken, otherFCM} {
		status, _, _ := postFCM(t, st, sendPath, sprintf(validBody, tok))
		got = append(got, status)
	}
	if want := []int{404, 500, 500, 200, 200}; !cmp.Equal(want, got) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	var recorded []int
	var reasons []string
	for _, d := range st.Inbox() {
		recorded = append(recorded, d.Status)
		reasons = append(reasons, d.Reason)
	}
	if !cmp.Equal(got, recorded) {
		t.Errorf("inbox statuses = %v, want %v", recorded, got)
	}
	if want := []string{"UNREGISTERED", "INTERNAL", "INTERNAL", "", ""}; !cmp.Equal(want, reasons) {
		t.Errorf("inbox reasons = %q, want %q", reasons, want)
	}
	// Clearing one token's faults leaves the others armed.
	st.AddFault(standin.Fault{Provider: standin.FCM, Token: fcmToken, Status: 500, Reason: "INTERNAL", Times: 5})
	st.AddFault(standin.Fault{Provider: standin.FCM, Token: otherFCM, Status: 503, Reason: "UNAVAILABLE", Times: 5})
	st.ClearFaultsFor(fcmToken)
	for tok, want := range map[string]int{fcmToken: 200, otherFCM: 503} {
		if status, _, _ := postFCM(t, st, sendPath, sprintf(validBody, tok)); status != want {
			t.Errorf("after ClearFaultsFor: %s answered %d, want %d", tok[:14], status, want)
		}
	}
	st.ClearFaults()
	st.ClearInbox()
	if status, _, _ := postFCM(t, st, sendPath, sprintf(validBody, fcmToken)); status != 200 || len(st.Inbox()) != 1 {
		t.Errorf("after clearing: status %d, inbox %d", status, len(st.Inbox()))
	}
}

// TestFCMFaultBody pins the v1 error shape of an injected fault.
func TestFCMFaultBody(t *testing.T) {
	tests := []struct {
		fault standin.Fault
		want  string
	}{
		{standin.Fault{Status: 404, Reason: "UNREGISTERED"},
			`{"error":{"code":404,"message":"UNREGISTERED","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}`},
		{standin.Fault{Status: 400, Reason: "INVALID_ARGUMENT", Message: "bad registration token"},
			`{"error":{"code":400,"message":"bad registration token","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"}]}}`},
		{standin.Fault{Status: 429, Reason: "QUOTA_EXCEEDED", RetryAfter: "Fri, 15 Jan 2027 08:00:00 GMT"},
			`{"error":{"code":429,"message":"QUOTA_EXCEEDED","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"QUOTA_EXCEEDED"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.fault.Reason, func(t *testing.T) {
			st, _, _ := mustStart(t)
			f := tt.fault
			f.Provider, f.Token = standin.FCM, "*"
			st.AddFault(f)
			status, h, body := postFCM(t, st, sendPath, sprintf(validBody, fcmToken))
			if status != f.Status || string(body) != tt.want || h.Get("Retry-After") != f.RetryAfter {
				t.Errorf("answer = %d %q (Retry-After %q), want %d %q (%q)", status, body, h.Get("Retry-After"), f.Status, tt.want, f.RetryAfter)
			}
		})
	}
}

// TestFCMChecks: the stand-in refuses malformed sends as FCM does, and
// never says "token" unless the token is what is wrong.
func TestFCMChecks(t *testing.T) {
	st, _, _ := mustStart(t)
	tests := []struct {
		name   string
		path   string
		body   string
		status int
	}{
		{"other project", "/v1/projects/other/messages:send", sprintf(validBody, fcmToken), 404},
		{"bad path", "/v1/messages:send", sprintf(validBody, fcmToken), 404},
		{"not JSON", sendPath, "{", 400},
		{"unknown top-level key", sendPath, `{"message":{"token":"t"},"extra":1}`, 400},
		{"no token", sendPath, `{"message":{"data":{"a":"1"}}}`, 400},
		{"number in data", sendPath, `{"message":{"token":"t","data":{"a":1}}}`, 400},
		{"null in data", sendPath, `{"message":{"token":"t","data":{"a":null}}}`, 400},
		{"bad ttl", sendPath, `{"message":{"token":"t","android":{"ttl":"30"}}}`, 400},
		{"bad priority", sendPath, `{"message":{"token":"t","android":{"priority":"urgent"}}}`, 400},
		{"unknown message key", sendPath, `{"message":{"token":"t","extra":"x"}}`, 400},
		{"too big", sendPath, `{"message":{"token":"t","data":{"a":"` + strings.Repeat("x", contract.MaxProviderPayload) + `"}}}`, 400},
		{"upper-case priority", sendPath, `{"message":{"token":"t","android":{"priority":"HIGH"}}}`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := postFCM(t, st, tt.path, tt.body)
			if status != tt.status {
				t.Errorf("status = %d, want %d (%s)", status, tt.status, body)
			}
			if status != 200 && strings.Contains(strings.ToLower(string(body)), "token") && tt.name != "no token" {
				t.Errorf("error body mentions the token: %s", body)
			}
		})
	}
	status, _, body := postFCM(t, st, sendPath, `{"validate_only":true,"message":{"token":"t"}}`)
	if want := `{"name":"projects/onorca-cloud/messages/fake_message_id"}`; status != 200 || string(body) != want {
		t.Errorf("dry run = %d %s, want 200 %s", status, body, want)
	}
}

// TestHandshakes: concurrent sends share one TLS connection per
// environment.
func TestHandshakes(t *testing.T) {
	st, clk, key := mustStart(t)
	c := mustAPNS(t, st, clk, key)
	m := pushtest.Cases()[0].Message()
	var wg sync.WaitGroup
	for i := range 32 {
		env := []contract.APNSEnvironment{contract.APNSSandbox, contract.APNSProduction}[i%2]
		wg.Go(func() {
			if o := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: iosToken, APNSEnvironment: env}, m); o.Kind != push.Sent {
				t.Errorf("Send = %+v", o)
			}
		})
	}
	wg.Wait()
	for _, env := range []contract.APNSEnvironment{contract.APNSSandbox, contract.APNSProduction} {
		if n := st.TLSHandshakes(env); n != 1 {
			t.Errorf("TLSHandshakes(%s) = %d, want 1", env, n)
		}
	}
}

func TestAddFaultErrors(t *testing.T) {
	st, _, _ := mustStart(t)
	for _, f := range []standin.Fault{
		{Provider: "gcm", Token: "*", Status: 500},
		{Provider: standin.APNS, Token: "*"},
		{Provider: standin.FCM, Token: "*", Status: 600},
	} {
		if err := st.AddFault(f); !errors.Is(err, standin.ErrBadFault) {
			t.Errorf("AddFault(%+v) = %v, want ErrBadFault", f, err)
		}
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := standin.Start(standin.Options{Clock: clock.Real{}}); !errors.Is(err, standin.ErrMissingOption) {
		t.Errorf("Start without a key = %v, want ErrMissingOption", err)
	}
	if _, err := standin.Start(standin.Options{Clock: clock.Real{}, APNSKey: []byte("x")}); err == nil {
		t.Error("Start with a bad key succeeded")
	}
}

// TestInboxSealed: an entry is marked "sealed" exactly when its body carries
// a paneKey starting with e2e1: where the provider's payload puts it (APNs
// orca.paneKey, FCM message.data.paneKey), alert or dismissal; the mark is
// omitted otherwise. A data-only FCM message is kept as received, so its
// banner can be drawn from data.title and data.message.
func TestInboxSealed(t *testing.T) {
	st, clk, key := mustStart(t)
	ac := mustAPNS(t, st, clk, key)
	fc, err := fcm.New(context.Background(), fcm.Options{Endpoint: st.FCMEndpoint(), Clock: clk, DataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	want := map[string]bool{"single_alert": false, "alert_with_pane": false, "dismissal": false,
		"sealed_alert": true, "silent_sealed_alert": true, "sealed_dismissal": true}
	for _, c := range pushtest.Cases() {
		sealed, ok := want[c.Name]
		if !ok {
			continue
		}
		st.ClearInbox()
		mustSendBoth(t, ac, fc, c.Message())
		b, err := json.Marshal(st.Inbox())
		if err != nil {
			t.Fatal(err)
		}
		var in []struct {
			Provider standin.Provider `json:"provider"`
			Sealed   *bool            `json:"sealed"`
			Body     struct {
				Message struct{ Data map[string]string } `json:"message"`
			} `json:"body"`
		}
		if err := json.Unmarshal(b, &in); err != nil || len(in) != 2 {
			t.Fatalf("%s: inbox %s (%v)", c.Name, b, err)
		}
		for _, d := range in {
			if got := d.Sealed != nil && *d.Sealed; got != sealed || (d.Sealed != nil && !*d.Sealed) {
				t.Errorf("%s: %s entry sealed = %v, want %v (omitted when false)", c.Name, d.Provider, d.Sealed, sealed)
			}
		}
		m := c.Message()
		if data := in[1].Body.Message.Data; m.Kind == contract.KindAlert && (data["title"] != m.Title || data["message"] != m.Body) {
			t.Errorf("%s: FCM data %v, want title %q and message %q", c.Name, data, m.Title, m.Body)
		}
	}
	// The mark reads the provider's own place: a paneKey elsewhere is not it.
	status, _, _ := postFCM(t, st, sendPath, `{"message":{"token":"`+fcmToken+`","data":{"a":"1"},"android":{"data":{"paneKey":"e2e1:x"}}}}`)
	if in := st.Inbox(); status != 200 || in[len(in)-1].Sealed {
		t.Errorf("a paneKey under android.data: status %d, sealed %v; want 200, false", status, in[len(in)-1].Sealed)
	}
}
