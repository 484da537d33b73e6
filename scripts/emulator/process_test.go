package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

type process struct {
	cmd    *exec.Cmd
	origin string
	ready  string // the ready line
	stderr *syncBuffer
	// stdout returns the lines written to stdout after the ready line.
	stdout func() []string
}

// syncBuffer is a bytes.Buffer safe for the process's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	os.Stderr.Write(p)
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startEmulator starts the built emulator as a separate process on a free
// port with a data directory of its own, and waits for its ready line.
func startEmulator(t testing.TB, env ...string) *process {
	t.Helper()
	return startEmulatorWith(t, emulatortest.FreePort(), env...)
}

// startEmulatorWith is startEmulator with the given arguments.
func startEmulatorWith(t testing.TB, args []string, env ...string) *process {
	t.Helper()
	stderr := &syncBuffer{}
	p := emulatortest.Start(t, args, env, stderr)
	return &process{cmd: p.Cmd, origin: p.Origin, ready: p.Ready, stderr: stderr, stdout: p.Stdout}
}

func TestEmulatorEndToEnd(t *testing.T) {
	p := startEmulator(t)
	ctx := context.Background()
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := hostclient.New(hostclient.Options{BaseURL: p.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.Register(ctx, hostclient.RegisterParams{DeviceID: "phone", Platform: contract.PlatformIOS,
		Token: strings.Repeat("0a", 32), APNSEnvironment: contract.APNSSandbox})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	list, err := h.Devices(ctx)
	if err != nil || len(list) != 1 || list[0].RegistrationID != id {
		t.Fatalf("Devices = %v, %v", list, err)
	}
	if err := h.Delete(ctx, id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := h.Delete(ctx, id); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("second Delete = %v, want not_found", err)
	}
	// SIGTERM drains and exits cleanly.
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

func TestEmulatorManualClock(t *testing.T) {
	p := startEmulator(t, "ORCA_PUSH_MANUAL_CLOCK=1")
	get := func() int64 {
		resp, err := http.Get(p.origin + "/_emulator/clock")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b [64]byte
		n, _ := resp.Body.Read(b[:])
		s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(b[:n])), `{"now":`), "}")
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("clock body %q", b[:n])
		}
		return v
	}
	before := get()
	resp, err := http.Post(p.origin+"/_emulator/clock", "application/json", strings.NewReader(`{"advanceMs":2500}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("advance: %v %v", resp, err)
	}
	if after := get(); after != before+2500 {
		t.Fatalf("clock = %d, want %d", after, before+2500)
	}
	resp, _ = http.Post(p.origin+"/_emulator/clock", "application/json", strings.NewReader(`{"advanceMs":-1}`))
	if resp.StatusCode != 400 {
		t.Fatalf("negative advance = %d, want 400", resp.StatusCode)
	}
}

func TestRealClockHasNoClockRoute(t *testing.T) {
	p := startEmulator(t)
	resp, err := http.Get(p.origin + "/_emulator/clock")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("GET /_emulator/clock = %d, want 404", resp.StatusCode)
	}
}

// BenchmarkColdStart measures, with the binary already built, the time from
// process start to the first 200 on /health, and the idle RSS after it.
func BenchmarkColdStart(b *testing.B) {
	emulatortest.MustBuild(b)
	var rss float64
	var total time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		p := startEmulator(b)
		for {
			resp, err := http.Get(p.origin + "/health")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
		}
		total += time.Since(t0)
		n++
		time.Sleep(500 * time.Millisecond) // let it go idle
		rss = rssMiB(b, p.cmd.Process.Pid)
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "ms-to-health")
	b.ReportMetric(rss, "idle-rss-MiB")
}

func rssMiB(b testing.TB, pid int) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
