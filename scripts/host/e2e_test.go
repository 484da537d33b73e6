package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"onorca.dev/push/scripts/emulator/emulatortest"
)

// hostBinary builds the host command line once per test binary.
var hostBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "orca-push-host")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "host")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", errors.New(string(b))
	}
	return bin, nil
})

func mustHostBinary(t *testing.T) string {
	t.Helper()
	bin, err := hostBinary()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return bin
}

// startEmulator starts the emulator process on SQLite and the manual clock
// and returns its origin once it printed its ready line.
func startEmulator(t *testing.T) string {
	t.Helper()
	return emulatortest.Start(t, emulatortest.FreePort("-manual-clock"), nil, nil).Origin
}

// result is one run of the host command line.
type result struct {
	stdout, stderr string
	code           int
}

// hostCLI runs the built command line against origin with env added.
type hostCLI struct {
	t   *testing.T
	env []string
}

func (h hostCLI) run(args ...string) result {
	h.t.Helper()
	cmd := exec.Command(mustHostBinary(h.t), args...)
	cmd.Env = append(os.Environ(), h.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// ok runs args, fails unless it exits 0, and decodes its --json output.
func (h hostCLI) ok(out any, args ...string) {
	h.t.Helper()
	r := h.run(args...)
	if r.code != 0 {
		h.t.Fatalf("host %s exited %d: %s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(r.stdout), out); err != nil {
			h.t.Fatalf("host %s: output %q is not JSON: %v", strings.Join(args, " "), r.stdout, err)
		}
	}
}

// advance moves the emulator's clock and runs what is due.
func advance(t *testing.T, origin, ms string) {
	t.Helper()
	emulatortest.Control(t, origin, "POST", "/_emulator/clock", `{"advanceMs":`+ms+`}`, nil)
	emulatortest.Control(t, origin, "POST", "/_emulator/tasks/run-due", "", nil)
}

// inboxEntry is what the test reads of a stand-in's request.
type inboxEntry struct {
	Provider string            `json:"provider"`
	Status   int               `json:"status"`
	Path     string            `json:"path"`
	Host     string            `json:"host"`
	Headers  map[string]string `json:"headers"`
	Body     struct {
		APS struct {
			Alert *struct{ Title, Body string } `json:"alert"`
			Badge *int64                        `json:"badge"`
		} `json:"aps"`
		Orca    map[string]any `json:"orca"`
		Message struct {
			Token        string            `json:"token"`
			Data         map[string]string `json:"data"`
			Notification *struct{ Title, Body string }
		} `json:"message"`
	} `json:"body"`
}

func inbox(t *testing.T, origin string) []inboxEntry {
	t.Helper()
	var in struct{ Deliveries []inboxEntry }
	emulatortest.Control(t, origin, "GET", "/_emulator/inbox", "", &in)
	return in.Deliveries
}
