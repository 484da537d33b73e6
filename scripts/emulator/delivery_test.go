package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/store/storetest"
)

// emu is an in-process emulator on a manual clock, driven through its HTTP
// API like a test of the one-command gateway would drive it.
type emu struct {
	t    *testing.T
	em   *emulator
	srv  *httptest.Server
	clk  *clock.Manual
	host *hostclient.Client
}

// startEmu starts an emulator on d; extra holds more variables as
// "NAME=value".
func startEmu(t *testing.T, d storetest.Dialect, extra ...string) *emu {
	t.Helper()
	return startEmuWith(t, d, queueOptions{}, extra...)
}

// startEmuWith is startEmu with the Cloud Tasks queues shaped by q.
func startEmuWith(t *testing.T, d storetest.Dialect, q queueOptions, extra ...string) *emu {
	t.Helper()
	return startEmuServing(t, d, q, io.Discard, func(h http.Handler) http.Handler { return h }, extra...)
}

// startEmuServing is startEmuWith with the structured log on stdout and the
// emulator's handler served through wrap.
func startEmuServing(t *testing.T, d storetest.Dialect, q queueOptions, stdout io.Writer,
	wrap func(http.Handler) http.Handler, extra ...string) *emu {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String()
	opts := d.Options(t)
	if opts.DataDir == "" {
		// PostgreSQL: the emulator still keeps its keys in its data
		// directory, which must be the test's, never the package folder.
		opts.DataDir = t.TempDir()
	}
	env := map[string]string{
		"ORCA_PUSH_PUBLIC_URL": origin, "ORCA_PUSH_DATABASE_URL": opts.DatabaseURL, "ORCA_PUSH_DATA_DIR": opts.DataDir,
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	ctx, cancel := context.WithCancel(context.Background())
	em, err := newEmulator(ctx, cfg, clk, clk, origin, obs.NewLogger(stdout), nil, q)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = wrap(em.mux())
	srv.Start()
	t.Cleanup(func() { srv.Close(); em.close(); cancel() })
	kp, _ := hostclient.GenerateKeypair(rand.Reader)
	h, err := hostclient.New(hostclient.Options{BaseURL: srv.URL, Keypair: kp, HTTPClient: srv.Client(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &emu{t: t, em: em, srv: srv, clk: clk, host: h}
}

func (e *emu) call(method, path, body string, out any) {
	e.t.Helper()
	emulatortest.Control(e.t, e.srv.URL, method, path, body, out)
}

// advance moves the clock by ms and runs every task due by then.
func (e *emu) advance(ms int64) {
	e.t.Helper()
	e.call("POST", "/_emulator/clock", fmt.Sprintf(`{"advanceMs":%d}`, ms), nil)
	e.call("POST", "/_emulator/tasks/run-due", "", nil)
}

func (e *emu) inbox() []standin.Delivery {
	e.t.Helper()
	var out struct{ Deliveries []standin.Delivery }
	e.call("GET", "/_emulator/inbox", "", &out)
	return out.Deliveries
}

func (e *emu) fault(f string) { e.t.Helper(); e.call("POST", "/_emulator/faults", f, nil) }

var iosToken = strings.Repeat("ab", 32)

func (e *emu) registerIOS(device string) string {
	e.t.Helper()
	id, err := e.host.Register(context.Background(), hostclient.RegisterParams{DeviceID: device,
		Platform: contract.PlatformIOS, Token: iosToken, APNSEnvironment: contract.APNSSandbox})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *emu) registerAndroid(device string) string {
	e.t.Helper()
	id, err := e.host.Register(context.Background(), hostclient.RegisterParams{DeviceID: device,
		Platform: contract.PlatformAndroid, Token: "fcm-token-" + device + strings.Repeat("x", 32)})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func alert(id string, seq int64) contract.Notification {
	return contract.Notification{NotificationID: id, Seq: seq, Epoch: "epoch-1", Source: contract.SourceAgentTaskComplete,
		AgentState: contract.AgentFinished, Title: "Agent finished", Body: "build " + id}
}

func (e *emu) send(reg string, n contract.Notification) contract.Status {
	e.t.Helper()
	res, err := e.host.Send(context.Background(), []string{reg}, n)
	if err != nil || len(res) != 1 {
		e.t.Fatalf("Send = %v, %v", res, err)
	}
	return res[0].Status
}

// apnsBody is the parsed APNs body of a delivery.
type apnsBody struct {
	APS struct {
		Alert            *struct{ Title, Body string } `json:"alert"`
		Sound            string                        `json:"sound"`
		ContentAvailable int                           `json:"content-available"`
	} `json:"aps"`
	Orca map[string]any `json:"orca"`
}

func parseAPNs(t *testing.T, d standin.Delivery) apnsBody {
	t.Helper()
	var b apnsBody
	if err := json.Unmarshal(d.Body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoneAlertWaitsForTheWindow(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			reg := e.registerIOS("phone")
			if s := e.send(reg, alert("n1", 1)); s != contract.StatusQueued {
				t.Fatalf("send = %s", s)
			}
			e.advance(2999)
			if n := len(e.inbox()); n != 0 {
				t.Fatalf("at +2999 ms the stand-in got %d requests, want 0", n)
			}
			e.advance(1)
			in := e.inbox()
			if len(in) != 1 {
				t.Fatalf("at +3000 ms the stand-in got %d requests, want 1", len(in))
			}
			d := in[0]
			b := parseAPNs(t, d)
			if d.Host != standin.HostAPNSSandbox || d.Path != "/3/device/"+iosToken || d.Headers["apns-push-type"] != "alert" ||
				b.APS.Alert == nil || b.APS.Alert.Title != "Agent finished" || b.APS.Sound != "default" {
				t.Fatalf("delivery = %+v", d)
			}
			// Nothing more is sent.
			e.advance(60_000)
			if n := len(e.inbox()); n != 1 {
				t.Fatalf("later the stand-in got %d requests, want 1", n)
			}
		})
	}
}

func TestBurstsCoalesce(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	reg := e.registerIOS("phone")
	for i := range 3 {
		n := alert(fmt.Sprintf("n%d", i), int64(i))
		if i == 1 {
			n.AgentState = contract.AgentNeedsInput
		}
		e.send(reg, n)
		e.advance(500)
	}
	e.advance(2000)
	in := e.inbox()
	if len(in) != 1 {
		t.Fatalf("got %d requests, want one summary", len(in))
	}
	b := parseAPNs(t, in[0])
	if b.APS.Alert.Title != "Orca" || b.APS.Alert.Body != "3 agents need attention" || b.Orca["coalescedCount"] != float64(3) {
		t.Fatalf("summary = %+v %v", b.APS.Alert, b.Orca)
	}
	// 33 alerts: a summary of 32 at once (the batch is full), then one alone.
	e.call("DELETE", "/_emulator/inbox", "", nil)
	for i := range 33 {
		e.send(reg, alert(fmt.Sprintf("m%d", i), int64(100+i)))
	}
	e.advance(0)
	in = e.inbox()
	if len(in) != 1 || parseAPNs(t, in[0]).Orca["coalescedCount"] != float64(32) {
		t.Fatalf("after 33 alerts: %d requests, want the 32-summary at once", len(in))
	}
	e.advance(3000)
	in = e.inbox()
	if len(in) != 2 || parseAPNs(t, in[1]).Orca["coalescedCount"] != float64(1) {
		t.Fatalf("after the window: %d requests, want the 33rd alone", len(in))
	}
}

func TestDismissalCancelsAndGoesAtOnce(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	reg := e.registerIOS("phone")
	e.send(reg, alert("n1", 5))
	dismiss := alert("n1", 5)
	dismiss.Kind = contract.KindDismiss
	e.send(reg, dismiss)
	e.advance(0)
	in := e.inbox()
	if len(in) != 1 {
		t.Fatalf("got %d requests, want the dismissal at once", len(in))
	}
	b := parseAPNs(t, in[0])
	if in[0].Headers["apns-push-type"] != "background" || in[0].Headers["apns-priority"] != "5" ||
		b.APS.ContentAvailable != 1 || b.APS.Alert != nil || b.Orca["kind"] != "dismiss" {
		t.Fatalf("dismissal = %+v", in[0])
	}
	// The alert it dismissed is never sent, and an older one is not either.
	e.send(reg, alert("n1", 4))
	e.advance(10_000)
	if n := len(e.inbox()); n != 1 {
		t.Fatalf("got %d requests, want only the dismissal", n)
	}
}

func TestSilentAlert(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	ios, android := e.registerIOS("iphone"), e.registerAndroid("pixel")
	n := alert("n1", 1)
	off := false
	n.Sound = &off
	if res, err := e.host.Send(context.Background(), []string{ios, android}, n); err != nil || len(res) != 2 {
		t.Fatalf("Send = %v, %v", res, err)
	}
	e.advance(3000)
	in := e.inbox()
	if len(in) != 2 {
		t.Fatalf("got %d requests, want 2", len(in))
	}
	for _, d := range in {
		switch d.Provider {
		case standin.APNS:
			if b := parseAPNs(t, d); b.APS.Sound != "" || b.APS.Alert == nil {
				t.Errorf("silent APNs alert = %s", d.Body)
			}
		case standin.FCM:
			if !bytes.Contains(d.Body, []byte(`"channel_id":"orca-desktop-silent"`)) {
				t.Errorf("silent FCM alert = %s", d.Body)
			}
		}
	}
}

// attemptTimes returns when the stand-in received each request, relative to
// t0, in seconds.
func attemptTimes(in []standin.Delivery, t0 int64) []float64 {
	out := make([]float64, len(in))
	for i, d := range in {
		out[i] = float64(d.ReceivedAt-t0) / 1000
	}
	return out
}

func TestAPNsRetriesUntilTheDeadline(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	reg := e.registerIOS("phone")
	e.fault(`{"provider":"apns","token":"*","status":500,"reason":"InternalServerError","times":100}`)
	t0 := e.clk.Now().UnixMilli()
	e.send(reg, alert("n1", 1))
	for range 400 { // five minutes in steps of one second
		e.advance(1000)
	}
	got := attemptTimes(e.inbox(), t0)
	// First at the window (3 s), then +2, +4, +8, +16, then every 30 s while
	// the next try lands before the 300 s deadline.
	want := []float64{3, 5, 9, 17, 33, 63, 93, 123, 153, 183, 213, 243, 273}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("attempts at %v s, want %v", got, want)
	}
}

func TestFCMMinimumDelays(t *testing.T) {
	for _, tt := range []struct {
		status int
		reason string
		want   float64 // seconds between the first and second attempt
	}{{503, "UNAVAILABLE", 10}, {429, "QUOTA_EXCEEDED", 60}} {
		t.Run(tt.reason, func(t *testing.T) {
			e := startEmu(t, storetest.Dialects(t)[0])
			reg := e.registerAndroid("pixel")
			e.fault(fmt.Sprintf(`{"provider":"fcm","token":"*","status":%d,"reason":%q,"times":1}`, tt.status, tt.reason))
			t0 := e.clk.Now().UnixMilli()
			e.send(reg, alert("n1", 1))
			for range 70 {
				e.advance(1000)
			}
			got := attemptTimes(e.inbox(), t0)
			if len(got) != 2 || got[1]-got[0] != tt.want {
				t.Fatalf("attempts at %v s, want a retry %v s after the first", got, tt.want)
			}
		})
	}
}

func TestRetryAfterBeyondDeadlineExpires(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	reg := e.registerIOS("phone")
	e.fault(`{"provider":"apns","token":"*","status":429,"reason":"TooManyRequests","retryAfter":"600","times":5}`)
	e.send(reg, alert("n1", 1))
	for range 8 {
		e.advance(60_000)
	}
	if n := len(e.inbox()); n != 1 {
		t.Fatalf("got %d attempts, want 1 then expiry", n)
	}
}

func TestDeletedRegistrationGetsNoMoreAttempts(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	reg := e.registerIOS("phone")
	e.fault(`{"provider":"apns","token":"*","status":503,"reason":"ServiceUnavailable","times":10}`)
	e.send(reg, alert("n1", 1))
	e.advance(3000)
	if err := e.host.Delete(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	for range 60 {
		e.advance(1000)
	}
	if n := len(e.inbox()); n != 1 {
		t.Fatalf("got %d attempts, want 1", n)
	}
}

func TestDeadToken(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	ctx := context.Background()
	reg := e.registerIOS("phone")
	e.fault(`{"provider":"apns","token":"*","status":410,"reason":"Unregistered"}`)
	e.send(reg, alert("n1", 1))
	e.advance(3000)
	if s := e.send(reg, alert("n2", 2)); s != contract.StatusDead {
		t.Fatalf("send after 410 = %s, want dead", s)
	}
	if list, _ := e.host.Devices(ctx); len(list) != 1 || !list[0].Dead {
		t.Fatalf("Devices = %v, want dead", list)
	}
	e.registerIOS("phone")
	if s := e.send(reg, alert("n3", 3)); s != contract.StatusQueued {
		t.Fatalf("send after re-registering = %s, want queued", s)
	}
}
