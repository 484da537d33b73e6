package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/obs"
)

type secretError struct{}

func (secretError) Error() string { return "token=SECRET-TOKEN title=SECRET-TITLE" }

func mustEdge(t *testing.T, log *bytes.Buffer) *httpx.Edge {
	t.Helper()
	l := obs.NewLogger(log)
	e, err := httpx.NewEdge(httpx.Options{
		Clock: clock.NewManual(time.UnixMilli(0)), Counters: obs.NewCounters(l), Log: l,
		Ready:  func(context.Context) error { return nil },
		Lookup: func(context.Context, string) (string, error) { return "", contract.ErrInvalidToken },
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestInternalErrorsLogOnlyTheType(t *testing.T) {
	var log bytes.Buffer
	e := mustEdge(t, &log)
	mux := http.NewServeMux()
	mux.Handle("/fail", e.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("query failed: %w", secretError{})
	}))
	mux.Handle("/panic", e.Handle(func(w http.ResponseWriter, r *http.Request) error { panic("SECRET-BODY") }))
	h := e.Wrap(mux)
	for _, path := range []string{"/fail", "/panic"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 500 || strings.TrimSpace(rec.Body.String()) != `{"error":"internal"}` {
			t.Fatalf("%s = %d %s", path, rec.Code, rec.Body)
		}
	}
	if strings.Contains(log.String(), "SECRET") {
		t.Fatalf("log holds the error's text: %s", log.String())
	}
	if !strings.Contains(log.String(), `"error":"httpx_test.secretError"`) || !strings.Contains(log.String(), "orca_push_request_failed") {
		t.Fatalf("log = %s, want the event and the error's type", log.String())
	}
}

// On Cloud Run (a trace project set), a failed request's line is ERROR and
// carries the request's trace.
func TestFailedRequestLineCarriesItsTrace(t *testing.T) {
	var log bytes.Buffer
	l := obs.NewLogger(&log)
	e, err := httpx.NewEdge(httpx.Options{
		Clock: clock.NewManual(time.UnixMilli(0)), Counters: obs.NewCounters(l), Log: l,
		Ready:        func(context.Context) error { return nil },
		Lookup:       func(context.Context, string) (string, error) { return "", contract.ErrInvalidToken },
		TraceProject: "onorca-cloud",
	})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Wrap(e.Handle(func(w http.ResponseWriter, r *http.Request) error { return secretError{} }))
	req := httptest.NewRequest("POST", "/v1/send", nil)
	req.Header.Set("X-Cloud-Trace-Context", "0123456789abcdef0123456789abcdef/42;o=1")
	h.ServeHTTP(httptest.NewRecorder(), req)
	// The failure's line, then the counters line the answer wrote (issue
	// 31 §1), which carries no trace: it sums the instance's requests.
	first, _, _ := bytes.Cut(log.Bytes(), []byte("\n"))
	var line map[string]any
	if err := json.Unmarshal(first, &line); err != nil {
		t.Fatalf("log %q: %v", log.String(), err)
	}
	if line["severity"] != "ERROR" || line["message"] != "orca_push_request_failed" ||
		line[obs.TraceKey] != "projects/onorca-cloud/traces/0123456789abcdef0123456789abcdef" {
		t.Fatalf("line = %v, want ERROR orca_push_request_failed with the trace", line)
	}
}

func TestCanceledClientIsCountedNotLogged(t *testing.T) {
	var log bytes.Buffer
	l := obs.NewLogger(&log)
	counters := obs.NewCounters(l)
	e, err := httpx.NewEdge(httpx.Options{
		Clock: clock.NewManual(time.UnixMilli(0)), Counters: counters, Log: l,
		Ready:  func(context.Context) error { return nil },
		Lookup: func(context.Context, string) (string, error) { return "", contract.ErrInvalidToken },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := e.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("send: %w", context.Canceled)
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil).WithContext(ctx))
	if rec.Code != 500 {
		t.Errorf("canceled client = %d, want 500", rec.Code)
	}
	if log.Len() != 0 {
		t.Errorf("a canceled client was logged as a failure: %s", log.String())
	}
	// The same error while the client is still there is a failure.
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil))
	got := counters.Consume()
	if got[obs.RequestCanceled] != 1 || got[obs.RequestError] != 1 {
		t.Errorf("counters = %v, want one request_canceled and one request_error", got)
	}
	if !strings.Contains(log.String(), "orca_push_request_failed") {
		t.Errorf("log = %s, want the failure of the live request", log.String())
	}
}

func TestContractErrorsKeepTheirStatus(t *testing.T) {
	var log bytes.Buffer
	e := mustEdge(t, &log)
	h := e.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("register: %w", contract.ErrBusy)
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || strings.TrimSpace(rec.Body.String()) != `{"error":"busy"}` {
		t.Fatalf("busy = %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if log.Len() != 0 {
		t.Fatalf("a contract error was logged: %s", log.String())
	}
}

func TestClientIP(t *testing.T) {
	tests := []struct {
		xff, realIP string
		hops        int
		want        string
	}{
		{"", "", 0, "unknown"},
		{"203.0.113.1", "", 0, "203.0.113.1"},
		{"1.1.1.1, 203.0.113.1", "", 0, "203.0.113.1"},
		{"1.1.1.1, 203.0.113.1, 10.0.0.1", "", 1, "203.0.113.1"},
		{"203.0.113.1", "198.51.100.1", 1, "198.51.100.1"},
		{"203.0.113.1", "", 1, "unknown"},
		{" , 203.0.113.1 ,", "", 0, "203.0.113.1"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.xff != "" {
			r.Header.Set("X-Forwarded-For", tt.xff)
		}
		if tt.realIP != "" {
			r.Header.Set("X-Real-Ip", tt.realIP)
		}
		if got := httpx.ClientIP(r, tt.hops); got != tt.want {
			t.Errorf("ClientIP(%q, %q, %d) = %q, want %q", tt.xff, tt.realIP, tt.hops, got, tt.want)
		}
	}
}

func TestBucketsRefillAndEviction(t *testing.T) {
	b := httpx.NewBuckets(30)
	t0 := time.UnixMilli(0)
	for i := range 30 {
		if !b.Allow("k", t0) {
			t.Fatalf("request %d refused", i+1)
		}
	}
	if b.Allow("k", t0) || b.Has("k", t0) {
		t.Fatal("31st allowed")
	}
	if !b.Has("k", t0.Add(2*time.Second)) {
		t.Fatal("no token 2 s later (refill is one per 2 s)")
	}
	for i := range contract.MaxTrackedBucketKeys + 10 {
		b.Allow(fmt.Sprint("ip", i), t0)
	}
	if n := b.Len(); n > contract.MaxTrackedBucketKeys {
		t.Fatalf("tracking %d keys, want at most %d", n, contract.MaxTrackedBucketKeys)
	}
}

// unreadBody fails the test that reads it.
type unreadBody struct{ t *testing.T }

func (b unreadBody) Read([]byte) (int, error) {
	b.t.Error("the body was read")
	return 0, errors.New("unreadBody: read")
}

// TestDeclaredLengthOverCapIsRefusedUnread: a Content-Length over
// contract.MaxBodyBytes is ErrRequestTooLarge before a byte is read, so a
// client that declares a gigabyte and sends nothing is answered 413 at once
// instead of holding the connection until the read timeout; the cap itself
// is still allowed (issue 26 §3).
func TestDeclaredLengthOverCapIsRefusedUnread(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Body, r.ContentLength = io.NopCloser(unreadBody{t}), 1<<30
	if _, err := httpx.ReadBody(httptest.NewRecorder(), r); !errors.Is(err, contract.ErrRequestTooLarge) {
		t.Errorf("ReadBody(Content-Length 1 GiB) = %v, want ErrRequestTooLarge", err)
	}
	body := strings.Repeat("x", contract.MaxBodyBytes)
	r = httptest.NewRequest("POST", "/", strings.NewReader(body))
	if b, err := httpx.ReadBody(httptest.NewRecorder(), r); err != nil || len(b) != contract.MaxBodyBytes {
		t.Errorf("ReadBody(%d bytes) = %d bytes, %v; want all of them", contract.MaxBodyBytes, len(b), err)
	}
}

// TestClientIPReadsEveryHeaderLine: X-Forwarded-For sent as several header
// lines is one list, the lines in the order they came (RFC 9110 §5.3), so
// the hop a proxy appended on a line of its own is the one counted from the
// right (issue 26 §5: reading only the first line survived every test).
func TestClientIPReadsEveryHeaderLine(t *testing.T) {
	lines := []string{"192.0.2.1, 192.0.2.2", "198.51.100.3", "203.0.113.4, 203.0.113.5"}
	want := []string{"203.0.113.5", "203.0.113.4", "198.51.100.3", "192.0.2.2", "192.0.2.1", "unknown"}
	r := httptest.NewRequest("GET", "/", nil)
	for _, l := range lines {
		r.Header.Add("X-Forwarded-For", l)
	}
	for hops, w := range want {
		if got := httpx.ClientIP(r, hops); got != w {
			t.Errorf("ClientIP(%q, %d) = %q, want %q", lines, hops, got, w)
		}
	}
}
