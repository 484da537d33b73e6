package routes_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/functions/routes"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/store/storetest"
)

// busyFront stands in front of the real gateway and answers one route with
// a 503 the first times requests: before the gateway sees the request, as
// the session-lookup queue does, or, with after set, once the gateway has
// served it, as when the gateway's answer is lost and the host is told to
// try again. Every other request goes through untouched.
type busyFront struct {
	next   http.Handler
	route  string // "METHOD /path"
	after  bool
	answer func(w http.ResponseWriter)

	// mu guards times and seen.
	mu    sync.Mutex
	times int // answers still to replace
	seen  int // requests on route
}

func (f *busyFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method+" "+r.URL.Path != f.route {
		f.next.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	f.seen++
	replace := f.times > 0
	f.times--
	f.mu.Unlock()
	if !replace {
		f.next.ServeHTTP(w, r)
		return
	}
	if f.after {
		f.next.ServeHTTP(httptest.NewRecorder(), r)
	}
	f.answer(w)
}

func (f *busyFront) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

// answerBusy writes the gateway's own 503 busy, Retry-After: 1 included.
func answerBusy(w http.ResponseWriter) { httpx.WriteError(w, contract.ErrBusy) }

// answer503 writes 503 with code and, when not empty, retryAfter verbatim.
func answer503(code, retryAfter string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": code})
	}
}

// waits records the waits a client asks for and returns at once.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return ctx.Err()
}

func (w *waits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.d
}

// mustFront serves f in front of the public routes of g and returns a new
// host's client of it, which expects g's origin, waits through wait and,
// when wrap is not nil, sends through wrap(transport).
func mustFront(t *testing.T, g *gateway, f *busyFront, wait func(context.Context, time.Duration) error,
	wrap func(http.RoundTripper) http.RoundTripper) *hostclient.Client {
	t.Helper()
	f.next = routes.Public(g.svc)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	hc := srv.Client()
	if wrap != nil {
		hc = &http.Client{Transport: wrap(hc.Transport)}
	}
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hostclient.New(hostclient.Options{BaseURL: srv.URL, Origin: g.srv.URL, Keypair: kp,
		HTTPClient: hc, Clock: g.clock, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustPhones registers n phones of c and returns their registration ids.
func mustPhones(t *testing.T, c *hostclient.Client, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		id, err := c.Register(context.Background(), android("phone"+strings.Repeat("x", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

func alert(seq int64) contract.Notification {
	return contract.Notification{NotificationID: "retry", Seq: seq, Epoch: "retry-test", Source: contract.SourcePlugin,
		AgentState: contract.AgentFinished, Title: "Retry", Body: "retried"}
}

// rowsAdded returns how many rows each table gained since before, leaving
// out the tables that did not change.
func (g *gateway) rowsAdded(t *testing.T, before map[string]int64) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for k, n := range g.rowCounts(t) {
		if n != before[k] {
			out[k] = n - before[k]
		}
	}
	return out
}

// TestClientRetriesBusy: a 503 busy is sent again after its Retry-After, up
// to hostclient.RetryAttempts requests; then the call fails with a
// *hostclient.RetryError that still matches contract.ErrBusy, and nothing
// was admitted.
func TestClientRetriesBusy(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name      string
		route     string
		busy      int
		wantWaits []time.Duration
		wantGiven bool // the call gives up
	}{
		{"send busy once", "POST /v1/send", 1, []time.Duration{sec}, false},
		{"send busy twice", "POST /v1/send", 2, []time.Duration{sec, sec}, false},
		{"send busy to the bound", "POST /v1/send", hostclient.RetryAttempts, []time.Duration{sec, sec}, true},
		{"challenge busy once", "POST /v1/host/challenge", 1, []time.Duration{sec}, false},
		{"session busy once", "POST /v1/host/session", 1, []time.Duration{sec}, false},
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					g := mustGateway(t, d)
					f := &busyFront{route: tt.route, answer: answerBusy}
					w := &waits{}
					c := mustFront(t, g, f, w.wait, nil)
					ids := mustPhones(t, c, 1) // signs in first
					f.mu.Lock()
					f.times = tt.busy
					f.mu.Unlock()
					if strings.HasPrefix(tt.route, "POST /v1/host/") {
						if err := c.SignIn(context.Background()); err != nil {
							t.Fatalf("SignIn = %v", err)
						}
					}
					before := g.rowCounts(t)
					res, err := c.Send(context.Background(), ids, alert(1))
					var re *hostclient.RetryError
					if tt.wantGiven {
						if !errors.As(err, &re) || re.Attempts != hostclient.RetryAttempts || !errors.Is(err, contract.ErrBusy) {
							t.Fatalf("Send = %v, want a RetryError after %d attempts matching busy", err, hostclient.RetryAttempts)
						}
						g.mustUnchanged(t, before)
					} else {
						if err != nil || len(res) != 1 || res[0].Status != contract.StatusQueued {
							t.Fatalf("Send = %v, %v; want queued", res, err)
						}
					}
					if got, want := f.requests(), 1+len(tt.wantWaits); tt.route == "POST /v1/send" && got != want {
						t.Errorf("requests on %s = %d, want %d", tt.route, got, want)
					}
					if diff := cmp.Diff(tt.wantWaits, w.got()); diff != "" {
						t.Errorf("waits (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestRetriedSendIsIdempotent: when the gateway admitted a send but the host
// was answered 503 and sent it again, the event is admitted once: one event
// row (one quota unit) and one recipient per phone, the row that puts the
// alert in its phone's batch, so one delivery each (reference-behaviour
// §4.1, §4.2). A retry admitted as a new event would add a second event and
// a second recipient per phone, joining the same batches as a second
// member.
func TestRetriedSendIsIdempotent(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			f := &busyFront{route: "POST /v1/send", after: true, answer: answerBusy}
			w := &waits{}
			c := mustFront(t, g, f, w.wait, nil)
			ids := mustPhones(t, c, 2)
			f.mu.Lock()
			f.times = 1
			f.mu.Unlock()
			before := g.rowCounts(t)
			res, err := c.Send(context.Background(), ids, alert(7))
			if err != nil || len(res) != 2 || res[0].Status != contract.StatusQueued || res[1].Status != contract.StatusQueued {
				t.Fatalf("Send = %v, %v; want two queued", res, err)
			}
			if got := f.requests(); got != 2 {
				t.Fatalf("requests on /v1/send = %d, want 2 (served, then retried)", got)
			}
			want := map[string]int64{"push_events": 1, "push_event_recipients": 2, "push_delivery_batches": 2}
			if diff := cmp.Diff(want, g.rowsAdded(t, before)); diff != "" {
				t.Fatalf("rows added by a retried send (-want +got):\n%s", diff)
			}
		})
	}
}
