package main

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
)

// front stands between the load tool and a real emulator process (SQLite,
// real clock), whose public origin it is. It passes every request on, and
// can stall the gateway or answer sends busy:
//   - from the stallAt-th POST /v1/send on, for stall, it holds every send
//     that arrives until the stall ends, as a gateway that stops answering
//     (a lock held, a pause) does;
//   - every busyEvery-th send is served by the emulator and then answered
//     503 busy, the gateway's own bytes, as if its answer were lost; a
//     request answered so once is passed through when it comes again, so
//     every request succeeds on its first retry.
//
// It also notes the lowest notificationSeq (the tool's request index) each
// client IP, that is each host, sent.
type front struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy

	// mu guards the fields below.
	mu         sync.Mutex
	sends      int
	stallAt    int
	stall      time.Duration
	stallUntil time.Time
	held       int // sends that arrived during the stall
	busyEvery  int
	busy       int              // sends answered busy
	busied     map[string]bool  // their bodies
	first      map[string]int64 // by X-Forwarded-For
}

// origin is the front's origin, which the load tool is pointed at.
func (f *front) origin() string { return f.srv.URL }

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/send" {
		f.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	req, err := contract.DecodeSendRequest(body)
	ip := r.Header.Get("X-Forwarded-For")
	f.mu.Lock()
	if seq, ok := f.first[ip]; err == nil && (!ok || req.Notification.Seq < seq) {
		f.first[ip] = req.Notification.Seq
	}
	f.sends++
	now := time.Now()
	if f.sends == f.stallAt {
		f.stallUntil = now.Add(f.stall)
	}
	var hold time.Duration
	if now.Before(f.stallUntil) {
		f.held++
		hold = f.stallUntil.Sub(now)
	}
	busy := f.busyEvery > 0 && f.sends%f.busyEvery == 0 && !f.busied[string(body)]
	if busy {
		f.busy++
		f.busied[string(body)] = true
	}
	f.mu.Unlock()
	time.Sleep(hold) // the stall under test
	if busy {
		f.proxy.ServeHTTP(httptest.NewRecorder(), r)
		httpx.WriteError(w, contract.ErrBusy)
		return
	}
	f.proxy.ServeHTTP(w, r)
}

// arm resets the send count and sets the stall and busy rules.
func (f *front) arm(stallAt int, stall time.Duration, busyEvery int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends, f.stallAt, f.stall, f.stallUntil, f.held = 0, stallAt, stall, time.Time{}, 0
	f.busyEvery, f.busy, f.busied, f.first = busyEvery, 0, map[string]bool{}, map[string]int64{}
}

// counts returns the sends held by the stall and those answered busy.
func (f *front) counts() (held, busy int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held, f.busy
}

// mustEmulator starts the built emulator as a separate process on SQLite
// and the real clock, with env added, behind a front, and waits for its
// ready line.
func mustEmulator(t *testing.T, env ...string) *front {
	t.Helper()
	return mustEmulatorWith(t, nil, env...)
}

// mustEmulatorWith is mustEmulator with the emulator's flags args added.
func mustEmulatorWith(t *testing.T, args []string, env ...string) *front {
	t.Helper()
	f := &front{busied: map[string]bool{}, first: map[string]int64{}}
	f.srv = httptest.NewUnstartedServer(f)
	p := emulatortest.Start(t, append(emulatortest.FreePort(), args...), append([]string{"ORCA_PUSH_DATABASE_URL=",
		"ORCA_PUSH_PUBLIC_URL=http://" + f.srv.Listener.Addr().String()}, env...), nil)
	u, err := url.Parse(p.Origin)
	if err != nil {
		t.Fatal(err)
	}
	// X-Forwarded-For passes as the tool set it: each host keeps its own
	// client IP.
	f.proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header["X-Forwarded-For"] = r.In.Header["X-Forwarded-For"]
	}}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// firsts returns the lowest notificationSeq each client IP sent since the
// last arm.
func (f *front) firsts() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.first)
}

// fault arms a stand-in fault (POST /_emulator/faults).
func (f *front) fault(t *testing.T, body string) {
	t.Helper()
	resp, err := http.Post(f.origin()+"/_emulator/faults", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /_emulator/faults = %d", resp.StatusCode)
	}
}
