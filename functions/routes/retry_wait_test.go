package routes_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/store/storetest"
)

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

	release := storetest.LockTable(t, opts, "push_sessions")
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
	release()
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
