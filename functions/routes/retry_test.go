package routes_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"io"
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

// TestRetryAfterValues: the client waits what Retry-After says, capped at
// hostclient.MaxRetryWait, in seconds or as an HTTP date on the host's
// clock; a 503 without a readable Retry-After and other statuses are
// returned at once as the gateway's *hostclient.APIError.
func TestRetryAfterValues(t *testing.T) {
	tests := []struct {
		name      string
		answer    func(now time.Time) func(http.ResponseWriter)
		wantWaits []time.Duration
		wantErr   *contract.Error // nil: the retry succeeds
	}{
		{"seconds", func(time.Time) func(http.ResponseWriter) { return answer503("busy", "2") },
			[]time.Duration{2 * time.Second}, nil},
		{"capped", func(time.Time) func(http.ResponseWriter) { return answer503("busy", "30") },
			[]time.Duration{hostclient.MaxRetryWait}, nil},
		{"zero", func(time.Time) func(http.ResponseWriter) { return answer503("busy", "0") },
			[]time.Duration{0}, nil},
		{"http date", func(now time.Time) func(http.ResponseWriter) {
			return answer503("busy", now.Add(3*time.Second).UTC().Format(http.TimeFormat))
		}, []time.Duration{3 * time.Second}, nil},
		{"no retry-after", func(time.Time) func(http.ResponseWriter) { return answer503("busy", "") },
			nil, contract.ErrBusy},
		{"unreadable retry-after", func(time.Time) func(http.ResponseWriter) { return answer503("busy", "soon") },
			nil, contract.ErrBusy},
		{"shutting down", func(time.Time) func(http.ResponseWriter) {
			return func(w http.ResponseWriter) { httpx.WriteError(w, contract.ErrShuttingDown) }
		}, nil, contract.ErrShuttingDown},
		{"internal with retry-after", func(time.Time) func(http.ResponseWriter) {
			return func(w http.ResponseWriter) {
				w.Header().Set("Retry-After", "1")
				httpx.WriteError(w, contract.ErrInternal)
			}
		}, nil, contract.ErrInternal},
	}
	d := storetest.Dialects(t)[0] // the client's behaviour; the database is not at stake
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustGateway(t, d)
			f := &busyFront{route: "POST /v1/send", answer: tt.answer(g.clock.Now())}
			w := &waits{}
			c := mustFront(t, g, f, w.wait, nil)
			ids := mustPhones(t, c, 1)
			f.mu.Lock()
			f.times = 1
			f.mu.Unlock()
			res, err := c.Send(context.Background(), ids, alert(1))
			if tt.wantErr == nil {
				if err != nil || len(res) != 1 || res[0].Status != contract.StatusQueued {
					t.Fatalf("Send = %v, %v; want queued after one retry", res, err)
				}
			} else {
				var re *hostclient.RetryError
				var api *hostclient.APIError
				if !errors.Is(err, tt.wantErr) || errors.As(err, &re) || !errors.As(err, &api) {
					t.Fatalf("Send = %v, want the gateway's %s, not retried", err, tt.wantErr.Code)
				}
			}
			if diff := cmp.Diff(tt.wantWaits, w.got()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// cancelOnBusy cancels a context once the client has read and closed a 503
// answer, so the context ends while the client waits to retry.
type cancelOnBusy struct {
	next   http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelOnBusy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		resp.Body = cancelingBody{resp.Body, c.cancel}
	}
	return resp, err
}

type cancelingBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelingBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// TestRetryWaitEndsWithCtx: a context that ends while the client waits to
// retry stops the call at once with a *hostclient.RetryError wrapping both
// the busy answer and the context's error. It uses the client's own real
// timer (a nil Options.Wait): the context is cancelled once the 503 is read,
// long before a wait of hostclient.MaxRetryWait could end.
func TestRetryWaitEndsWithCtx(t *testing.T) {
	g := mustGateway(t, storetest.Dialects(t)[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &busyFront{route: "POST /v1/send", answer: answer503("busy", "60")}
	c := mustFront(t, g, f, nil, func(rt http.RoundTripper) http.RoundTripper { return cancelOnBusy{rt, cancel} })
	ids := mustPhones(t, c, 1)
	f.mu.Lock()
	f.times = hostclient.RetryAttempts
	f.mu.Unlock()
	_, err := c.Send(ctx, ids, alert(1))
	var re *hostclient.RetryError
	if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, contract.ErrBusy) {
		t.Fatalf("Send = %v, want a RetryError after 1 attempt wrapping busy and context.Canceled", err)
	}
	if got := f.requests(); got != 1 {
		t.Fatalf("requests on /v1/send = %d, want 1", got)
	}
}

// TestClientRidesOutAdmissionOverflow: the gateway's real 503 busy, from a
// full session-lookup queue (reference-behaviour §2.7), is retried after its
// Retry-After and then served. Every lookup is held on a PostgreSQL table
// lock as in TestAdmissionOverflow; the refused calls wait (in the client's
// Wait) until the lock is gone and the admitted calls are answered, so their
// retry finds the queue empty.
func TestClientRidesOutAdmissionOverflow(t *testing.T) {
	opts := storetest.Postgres(t).Options(t)
	g := mustGatewayOn(t, opts)
	refused := make(chan time.Duration, 64)
	drained := make(chan struct{})
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hostclient.New(hostclient.Options{BaseURL: g.srv.URL, Keypair: kp, HTTPClient: g.srv.Client(), Clock: g.clock,
		Wait: func(ctx context.Context, d time.Duration) error {
			refused <- d
			select {
			case <-drained:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	mustSignIn(t, c)

	locker, err := sql.Open("pgx", opts.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	tx, err := locker.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("LOCK TABLE push_sessions IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	const admitted = contract.AuthLookupsRunning + contract.AuthLookupsWaiting
	const total = admitted + 5
	errs := make(chan error, total)
	for range total {
		go func() {
			_, err := c.Devices(context.Background())
			errs <- err
		}()
	}
	for range total - admitted {
		select {
		case d := <-refused:
			if d != time.Second {
				t.Errorf("wait after busy = %v, want 1s (Retry-After: 1)", d)
			}
		case <-time.After(10 * time.Second): // a process boundary: the lock holder is another connection
			t.Fatal("no call was refused busy while lookups are held")
		}
	}
	tx.Rollback()
	for range admitted {
		if err := <-errs; err != nil {
			t.Errorf("admitted call: %v", err)
		}
	}
	close(drained)
	for range total - admitted {
		if err := <-errs; err != nil {
			t.Errorf("retried call: %v", err)
		}
	}
	if n := len(refused); n != 0 {
		t.Errorf("%d retries were refused again", n)
	}
}
