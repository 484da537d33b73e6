package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

// The tests of this file check the emulator the way a person meets it: its
// help, where it listens, what it prints and how it answers mistakes.

func TestHelpListsFlagsAndEnvironment(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run(-h) = %v, want flag.ErrHelp", err)
	}
	want := []string{"-addr", "-manual-clock", "-queues", "-queue-rate", "-queue-concurrency", "-read-timeout", "-write-timeout", "-idle-timeout"}
	for _, v := range config.Vars() {
		want = append(want, v.Name)
	}
	for _, w := range want {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("help does not mention %s:\n%s", w, stdout.String())
		}
	}
	// As a process: -h exits 0, a flag it does not know exits 2.
	bin := emulatortest.MustBuild(t)
	for _, tt := range []struct {
		arg  string
		code int
	}{{"-h", 0}, {"--help", 0}, {"-no-such-flag", 2}, {"extra", 2}, {"-queues=0", 2}, {"-queues=33", 2},
		{"-queue-rate=0", 2}, {"-queue-rate=501", 2}, {"-queue-concurrency=-1", 2}, {"-queue-concurrency=1001", 2}} {
		err := exec.Command(bin, tt.arg).Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code {
			t.Errorf("emulator %s exited %d, want %d", tt.arg, code, tt.code)
		}
	}
}

// -addr :PORT and 0.0.0.0:PORT listen everywhere and give the public origin
// http://127.0.0.1:PORT, at which a host signs in, and say on stderr that
// the unauthenticated control API is then reachable from other machines;
// PORT is honoured without -addr, on the loopback interface, silently.
func TestListenAddresses(t *testing.T) {
	free := freePort(t)
	tests := []struct {
		name    string
		args    []string
		env     []string
		want    string // origin, or its prefix
		exposed bool
	}{
		{"colon port", []string{"-addr", ":0"}, nil, "http://127.0.0.1:", true},
		{"every interface", []string{"-addr", "0.0.0.0:0"}, nil, "http://127.0.0.1:", true},
		{"PORT", nil, []string{"PORT=" + free}, "http://127.0.0.1:" + free, false},
	}
	const warning = "reachable from other machines: anyone who can reach it can use the control API"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startEmulatorWith(t, tt.args, tt.env...)
			if !strings.HasPrefix(p.origin, tt.want) {
				t.Fatalf("origin %q, want %q", p.origin, tt.want)
			}
			var stderr string
			for deadline := time.Now().Add(10 * time.Second); ; { // crossing a process boundary
				if stderr = p.stderr.String(); strings.Contains(stderr, warning) || !tt.exposed ||
					time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got := strings.Contains(stderr, warning); got != tt.exposed {
				t.Errorf("stderr warns of other machines: %v, want %v (stderr %q)", got, tt.exposed, stderr)
			}
			kp, _ := hostclient.GenerateKeypair(rand.Reader)
			h, err := hostclient.New(hostclient.Options{BaseURL: p.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.SignIn(context.Background()); err != nil {
				t.Fatalf("SignIn at %s: %v", p.origin, err)
			}
		})
	}
}

// freePort returns a port nothing listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// The ready line names the console, GET / leads there, and the console is a
// page.
func TestReadyLineAndConsoleURL(t *testing.T) {
	p := startEmulator(t)
	if want := "console " + p.origin + "/_emulator/"; !strings.Contains(p.ready, want) {
		t.Errorf("ready line %q does not name %q", p.ready, want)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(p.origin + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/_emulator/" {
		t.Errorf("GET / = %d to %q, want 302 to /_emulator/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.Get(p.origin + "/_emulator/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !bytes.Contains(body, []byte("<title>orca-push emulator")) {
		t.Errorf("GET /_emulator/ = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// Unknown routes and wrong methods answer the contract's JSON error shape.
func TestMissesAnswerJSON(t *testing.T) {
	p := startEmulator(t)
	kp, _ := hostclient.GenerateKeypair(rand.Reader)
	h, err := hostclient.New(hostclient.Options{BaseURL: p.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		bearer       bool
		status       int
		body, allow  string
	}{
		{"GET", "/nowhere", false, 404, `{"error":"not_found"}`, ""},
		{"GET", "/v1/nothing", false, 404, `{"error":"not_found"}`, ""},
		{"GET", "/_emulator/clock", false, 404, `{"error":"not_found"}`, ""}, // the real clock has no clock route
		{"PUT", "/_emulator/inbox", false, 405, `{"error":"method_not_allowed"}`, "DELETE, GET, HEAD"},
		{"GET", "/v1/send", true, 405, `{"error":"method_not_allowed"}`, "POST"},
		{"GET", "/v1/host/challenge", false, 405, `{"error":"method_not_allowed"}`, "POST"},
	}
	for _, tt := range tests {
		var resp *http.Response
		if tt.bearer {
			resp, err = h.Raw(context.Background(), tt.method, tt.path, nil)
		} else {
			req, _ := http.NewRequest(tt.method, p.origin+tt.path, nil)
			resp, err = http.DefaultClient.Do(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || strings.TrimSpace(string(body)) != tt.body ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s = %d %s (%s, Allow %q), want %d %s (Allow %q)", tt.method, tt.path, resp.StatusCode, body,
				resp.Header.Get("Content-Type"), resp.Header.Get("Allow"), tt.status, tt.body, tt.allow)
		}
	}
}

// A refused request prints one line on stderr naming the field and the rule,
// never the value.
func TestRefusalReasonOnStderr(t *testing.T) {
	p := startEmulator(t)
	kp, _ := hostclient.GenerateKeypair(rand.Reader)
	h, err := hostclient.New(hostclient.Options{BaseURL: p.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const secret = "SECRETxTOKENxVALUE"
	_, err = h.Register(ctx, hostclient.RegisterParams{DeviceID: "phone", Platform: contract.PlatformIOS, Token: secret,
		APNSEnvironment: contract.APNSSandbox})
	if !errors.Is(err, contract.ErrInvalidRequest) {
		t.Fatalf("Register(bad token) = %v, want invalid_request", err)
	}
	title := strings.Repeat("SECRETxTITLE", 10)
	_, err = h.Send(ctx, []string{"r1"}, contract.Notification{Seq: 1, Epoch: "e", Source: contract.SourcePlugin, Title: title})
	if !errors.Is(err, contract.ErrInvalidRequest) {
		t.Fatalf("Send(long title) = %v, want invalid_request", err)
	}
	want := []string{
		"emulator: refused POST /v1/devices with 400 invalid_request: token is not an APNs token\n",
		"emulator: refused POST /v1/send with 400 invalid_request: title is out of range\n",
	}
	var got string
	for deadline := time.Now().Add(10 * time.Second); ; { // crossing a process boundary
		if got = p.stderr.String(); strings.Count(got, "\n") >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != strings.Join(want, "") {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if strings.Contains(got, "SECRET") {
		t.Errorf("stderr holds a value of the request: %q", got)
	}
}

// Every origin error names the expected and the received origin: the
// gateway's configuration, and a host that reaches the emulator as
// localhost when its origin is 127.0.0.1.
func TestOriginErrorsExplainThemselves(t *testing.T) {
	env := map[string]string{"ORCA_PUSH_PUBLIC_URL": "http://localhost:8080/", "ORCA_PUSH_DATA_DIR": t.TempDir()}
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	var oe *config.OriginError
	if !errors.As(err, &oe) || oe.Expected != "http://localhost:8080" || oe.Received != "http://localhost:8080/" {
		t.Errorf("run with a trailing slash = %v, want an OriginError expecting http://localhost:8080", err)
	}

	p := startEmulator(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(p.origin, "http://"))
	kp, _ := hostclient.GenerateKeypair(rand.Reader)
	h, err := hostclient.New(hostclient.Options{BaseURL: "http://localhost:" + port, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	err = h.SignIn(context.Background())
	var hoe *hostclient.OriginError
	if !errors.As(err, &hoe) || hoe.Expected != "http://localhost:"+port || hoe.Received != p.origin {
		t.Errorf("SignIn through localhost = %v, want an OriginError expecting localhost, receiving %s", err, p.origin)
	}
}

// A data directory that cannot be used is named in the error.
func TestDataDirErrorNamesThePath(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "push")
	env := map[string]string{"ORCA_PUSH_DATA_DIR": dir}
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), strconv.Quote(dir)) {
		t.Fatalf("run with data directory %s = %v, want an error naming it", dir, err)
	}
}
