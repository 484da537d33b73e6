package routes_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"onorca.dev/push/functions/routes"

	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestDatabaseDownIs503: while PostgreSQL refuses connections (and drops
// the ones open), every route that needs it answers 503
// dependency_unavailable with a Retry-After, counted and not logged as a
// failure; once it is back, requests succeed again.
func TestDatabaseDownIs503(t *testing.T) {
	opts, db := storetest.CountingPostgres(t)
	g := mustGatewayOn(t, opts)
	token := mustSignIn(t, g.mustHost(t))
	g.svc.Counters.Consume()
	db.SetDown(true)
	requests := []struct{ method, path, body string }{
		{"POST", "/v1/host/challenge", `{"v":1,"hostPublicKeyB64":"` + mustKeypair(t).PublicKeyB64() + `"}`},
		{"GET", "/v1/devices", ""},
		{"POST", "/v1/send", contractSend},
		{"DELETE", "/v1/devices/r1", ""},
	}
	for _, r := range requests {
		h := bearerHeader(token)
		h.Set("X-Forwarded-For", g.freshIP().Get("X-Forwarded-For"))
		status, body, retry := g.doHeader(t, r.method, r.path, r.body, h, "Retry-After")
		if status != http.StatusServiceUnavailable || body != `{"error":"dependency_unavailable"}` || retry == "" {
			t.Errorf("%s %s with the database down = %d %s, Retry-After %q; want 503 dependency_unavailable with Retry-After",
				r.method, r.path, status, body, retry)
		}
	}
	got := g.svc.Counters.Consume()
	if got[obs.DatabaseUnavailable] != int64(len(requests)) || got[obs.RequestError] != 0 {
		t.Errorf("counters %v, want database_unavailable %d and no request_error", got, len(requests))
	}
	db.SetDown(false)
	// The pool may hand out a connection that died while the database was
	// down once per idle connection; after that, requests are served.
	status := 0
	for range opts.PoolMax + 2 {
		if status, _ = g.do(t, "GET", "/v1/devices", "", bearerHeader(token)); status == http.StatusOK {
			break
		}
	}
	if status != http.StatusOK {
		t.Fatalf("GET /v1/devices after the database came back = %d, want 200", status)
	}
}

// TestHostLockHeldIs503: a request that waits for its host's lock longer
// than the lock wait is answered 503 busy with Retry-After 1, counted, on
// both databases, instead of a 500 after several waits.
func TestHostLockHeldIs503(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			kp := mustKeypair(t)
			h := g.mustHostOf(t, kp)
			token := mustSignIn(t, h)
			reg, err := h.Register(context.Background(), android("phone"))
			if err != nil {
				t.Fatal(err)
			}
			g.svc.Counters.Consume()
			// Another transaction of the host holds its lock.
			locked, release := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- g.svc.Store.HostTx(context.Background(), kp.Fingerprint(), func(tx *store.Tx) error {
					if _, err := tx.CheckEvent(context.Background(), kp.Fingerprint(), reg, "none"); err != nil {
						return err
					}
					close(locked)
					<-release
					return nil
				})
			}()
			<-locked
			before := g.rowCounts(t)
			status, body, retry := g.doHeader(t, "POST", "/v1/send",
				`{"v":1,"registrationIds":["`+reg+`"],"notification":`+contractNotification+`}`, bearerHeader(token), "Retry-After")
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if status != http.StatusServiceUnavailable || body != `{"error":"busy"}` || retry != "1" {
				t.Fatalf("send while the host lock is held = %d %s, Retry-After %q; want 503 busy, Retry-After 1", status, body, retry)
			}
			g.mustUnchanged(t, before)
			if got := g.svc.Counters.Consume(); got[obs.DatabaseBusy] != 1 || got[obs.RequestError] != 0 {
				t.Errorf("counters %v, want database_busy 1 and no request_error", got)
			}
			// Once the lock is free the same send is queued.
			if status, body := g.do(t, "POST", "/v1/send",
				`{"v":1,"registrationIds":["`+reg+`"],"notification":`+contractNotification+`}`, bearerHeader(token)); status != 200 ||
				body != `{"results":[{"registrationId":"`+reg+`","status":"queued"}]}` {
				t.Fatalf("send after the lock = %d %s", status, body)
			}
		})
	}
}

// contractNotification is a valid notification; contractSend sends it to an
// unknown registration.
const (
	contractNotification = `{"notificationSeq":1,"notificationEpoch":"e1","source":"plugin","agentState":null,"title":"t","body":""}`
	contractSend         = `{"v":1,"registrationIds":["r1"],"notification":` + contractNotification + `}`
)

// TestDatabase503IsOnStdoutBeforeTheAnswer: a request answered 503 because
// the database is down has its database_unavailable on stdout, in a counters
// line it wrote itself, before its answer's first byte (issue 31 §1), with
// the counters' ticker never running, as on a Cloud Run instance that has no
// CPU between requests.
func TestDatabase503IsOnStdoutBeforeTheAnswer(t *testing.T) {
	opts, db := storetest.CountingPostgres(t)
	stdout := &logBuffer{}
	g := mustGatewayLogging(t, opts, stdout)
	token := mustSignIn(t, g.mustHost(t))
	db.SetDown(true)
	h := routes.Public(g.svc)
	req := httptest.NewRequest("GET", "/v1/devices", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := &stdoutAtFirstByte{ResponseRecorder: httptest.NewRecorder(), stdout: stdout}
	h.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("GET /v1/devices with the database down = %d, want 503", w.Code)
	}
	if !strings.Contains(w.atFirstByte, `"`+obs.DatabaseUnavailable+`":1`) {
		t.Fatalf("stdout at the answer's first byte:\n%s\nwant a counters line with %s 1", w.atFirstByte, obs.DatabaseUnavailable)
	}
	if strings.Contains(stdout.String(), token) {
		t.Fatalf("stdout holds the session token: %s", stdout.String())
	}
}

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

// stdoutAtFirstByte records what stdout held when the answer's first byte
// (its header) was written.
type stdoutAtFirstByte struct {
	*httptest.ResponseRecorder
	stdout      *logBuffer
	atFirstByte string
	sent        bool
}

func (w *stdoutAtFirstByte) WriteHeader(status int) {
	w.first()
	w.ResponseRecorder.WriteHeader(status)
}

func (w *stdoutAtFirstByte) Write(b []byte) (int, error) {
	w.first()
	return w.ResponseRecorder.Write(b)
}

func (w *stdoutAtFirstByte) first() {
	if !w.sent {
		w.sent = true
		w.atFirstByte = w.stdout.String()
	}
}
