package main

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store/storetest"
)

// logBuffer is a structured log's stdout, safe for concurrent writes.
type logBuffer struct {
	// mu guards buf.
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// firstBytes records, for each request path, what stdout held when the
// answer's first byte (its header) was written: what Cloud Logging has
// while the instance still has CPU.
type firstBytes struct {
	stdout *logBuffer
	// mu guards seen.
	mu   sync.Mutex
	seen map[string][]string
}

func (f *firstBytes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&firstByteWriter{ResponseWriter: w, at: func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.seen[r.URL.Path] = append(f.seen[r.URL.Path], f.stdout.String())
		}}, r)
	})
}

// stdoutAt returns what stdout held at the first byte of each answer to path.
func (f *firstBytes) stdoutAt(path string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[path]
}

type firstByteWriter struct {
	http.ResponseWriter
	at   func()
	sent bool
}

func (w *firstByteWriter) WriteHeader(status int) {
	w.first()
	w.ResponseWriter.WriteHeader(status)
}

func (w *firstByteWriter) Write(b []byte) (int, error) {
	w.first()
	return w.ResponseWriter.Write(b)
}

func (w *firstByteWriter) first() {
	if !w.sent {
		w.sent = true
		w.at()
	}
}

// TestDeadDeliveryIsOnStdoutBeforeTheAnswer: a delivery APNs refuses 410 is
// counted delivery_dead on stdout before the answer of the request that
// made it (issue 31 §1), once delivered inline by POST /v1/send and once
// by the deliver function a task calls, with the counters' ticker never
// running, as on a Cloud Run instance that has no CPU between requests.
func TestDeadDeliveryIsOnStdoutBeforeTheAnswer(t *testing.T) {
	tests := []struct {
		name, path string
		env        []string
		advanceMs  int64
	}{
		{"inline", "/v1/send", []string{"ORCA_PUSH_DELIVER_INLINE=1", "ORCA_PUSH_COALESCE_MS=0"}, 0},
		{"deliver function", deliverPath, nil, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout := &logBuffer{}
			fb := &firstBytes{stdout: stdout, seen: map[string][]string{}}
			e := startEmuServing(t, storetest.Dialects(t)[0], queueOptions{}, stdout, fb.wrap, tt.env...)
			reg := e.registerIOS("phone")
			e.fault(`{"provider":"apns","token":"*","status":410,"reason":"Unregistered"}`)
			e.send(reg, alert("n1", 1))
			if tt.advanceMs > 0 {
				e.advance(tt.advanceMs)
			}
			if n := len(e.inbox()); n != 1 {
				t.Fatalf("APNs got %d requests, want 1", n)
			}
			at := fb.stdoutAt(tt.path)
			if len(at) != 1 {
				t.Fatalf("%s answered %d times, want 1", tt.path, len(at))
			}
			if !strings.Contains(at[0], `"`+obs.DeliveryDead+`":1`) {
				t.Fatalf("stdout at the first byte of %s's answer:\n%s\nwant a counters line with delivery_dead 1", tt.path, at[0])
			}
			if strings.Contains(stdout.String(), iosToken) || strings.Contains(stdout.String(), alert("n1", 1).Body) {
				t.Fatalf("stdout holds the token or the body: %s", stdout.String())
			}
			if s := e.send(reg, alert("n2", 2)); s != contract.StatusDead {
				t.Fatalf("send after 410 = %s, want dead", s)
			}
		})
	}
}
