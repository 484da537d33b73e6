// Package emulatortest runs the emulator as a separate process for the tests
// of the programs that talk to it (the emulator's own, the host command
// line's, the load tool's): built once per test binary, on a free port, with
// a data directory of its own, and killed when the test ends.
package emulatortest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// readyTimeout bounds the wait for the ready line: a process boundary, so a
// real-time wait.
const readyTimeout = 30 * time.Second

// Build builds the emulator once per test binary and returns the path of the
// binary.
func Build() (string, error) { return build() }

var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "orca-push-emulator")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "emulator")
	out, err := exec.Command("go", "build", "-o", bin, "onorca.dev/push/scripts/emulator").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

// MustBuild is [Build] that fails t when the build fails.
func MustBuild(t testing.TB) string {
	t.Helper()
	bin, err := Build()
	if err != nil {
		t.Fatalf("build emulator: %v", err)
	}
	return bin
}

// Process is a running emulator.
type Process struct {
	// Cmd is the process; a test may signal it and wait for it.
	Cmd *exec.Cmd
	// Origin is the origin it serves, from its ready line.
	Origin string
	// Ready is its ready line.
	Ready string
	// stdout holds what it wrote to stdout after the ready line.
	stdout *lines
}

// lines splits what the process writes to stdout into lines: the first
// that holds "ready on " goes to ready, those after it are kept. exec's
// copy into it ends before Cmd.Wait returns, so no line is lost.
type lines struct {
	ready chan string
	// mu guards the fields below.
	mu      sync.Mutex
	partial []byte
	seen    bool
	after   []string
}

func (ls *lines) Write(p []byte) (int, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.partial = append(ls.partial, p...)
	for {
		i := bytes.IndexByte(ls.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(ls.partial[:i])
		ls.partial = ls.partial[i+1:]
		switch {
		case ls.seen:
			ls.after = append(ls.after, line)
		case strings.Contains(line, "ready on "):
			ls.seen = true
			ls.ready <- line
		}
	}
}

// Stdout returns the lines the process wrote to stdout after its ready line
// so far; after Cmd.Wait returned, all of them.
func (p *Process) Stdout() []string {
	p.stdout.mu.Lock()
	defer p.stdout.mu.Unlock()
	return slices.Clone(p.stdout.after)
}

// FreePort returns the arguments that make the emulator listen on a free
// port of the loopback interface, followed by more.
func FreePort(more ...string) []string {
	return append([]string{"-addr", "127.0.0.1:0"}, more...)
}

// Start starts the emulator with args (FreePort(), for most tests) and the
// test's environment plus ORCA_PUSH_DATA_DIR set to a directory of t's, then
// env (which may override it). The process's stderr goes to stderr
// (os.Stderr when nil). Start waits for the ready line and kills the process
// when t ends.
func Start(t testing.TB, args, env []string, stderr io.Writer) *Process {
	t.Helper()
	if stderr == nil {
		stderr = os.Stderr
	}
	cmd := exec.Command(MustBuild(t), args...)
	cmd.Env = append(os.Environ(), append([]string{"ORCA_PUSH_DATA_DIR=" + t.TempDir()}, env...)...)
	stdout := &lines{ready: make(chan string, 1)}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	select {
	case line := <-stdout.ready:
		_, rest, _ := strings.Cut(line, "ready on ")
		return &Process{Cmd: cmd, Origin: strings.Fields(rest)[0], Ready: line, stdout: stdout}
	case <-time.After(readyTimeout):
		t.Fatal("the emulator printed no ready line")
		return nil
	}
}

// Control calls a route of the emulator at origin (its control API, most
// often), fails t unless it answers 2xx, and decodes the answer into out
// when out is not nil.
func Control(t testing.TB, origin, method, path, body string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, origin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
}
