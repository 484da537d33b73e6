package httpx

import (
	"context"
	"net/http"
	"sync"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
)

// drain counts in-flight requests and, once begun, refuses new ones.
type drain struct {
	// mu guards draining, inflight and idle.
	mu       sync.Mutex
	draining bool
	inflight int
	idle     chan struct{} // closed when draining and inflight reaches 0
}

func (d *drain) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	d.inflight++
	return true
}

func (d *drain) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inflight--
	if d.draining && d.inflight == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
}

// Drain makes every new request answer 503 shutting_down and waits until the
// requests already running have finished or ctx ends.
func (e *Edge) Drain(ctx context.Context) error {
	d := &e.drain
	d.mu.Lock()
	d.draining = true
	if d.inflight == 0 {
		d.mu.Unlock()
		return nil
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// healthBody is GET /health's answer (design.md "Functions").
var healthBody = struct {
	OK               bool `json:"ok"`
	PushProtocol     int  `json:"pushProtocol"`
	DeliveryProtocol int  `json:"deliveryProtocol"`
}{true, contract.PushProtocol, contract.DeliveryProtocol}

// Wrap returns h behind the shared edge: the drain, GET /health, GET /ready,
// panic recovery to 500 internal, and unknown routes and wrong methods
// answered in the JSON error shape ([Misses]). Every function's Handler returns its mux
// through Wrap, so deployed and emulated paths are the same.
func (e *Edge) Wrap(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, healthBody)
	})
	mux.Handle("GET /ready", e.Handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := e.ready.check(r.Context()); err != nil {
			return contract.ErrDependencyUnavailable
		}
		WriteJSON(w, http.StatusOK, struct {
			OK bool `json:"ok"`
		}{true})
		return nil
	}))
	mux.Handle("/", h)
	misses := Misses(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.drain.enter() {
			writeContractError(w, contract.ErrShuttingDown)
			return
		}
		defer e.drain.leave()
		w = &countersFirst{ResponseWriter: w, due: e.writeDueCounters}
		// A route that writes no answer at all still gets the line out
		// before the server sends its implicit 200.
		defer e.writeDueCounters()
		r = r.WithContext(obs.WithTrace(r.Context(), e.traceProject, r.Header.Get("X-Cloud-Trace-Context")))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				e.writeError(w, r, panicError{})
			}
		}()
		misses.ServeHTTP(w, r)
	})
}

// writeDueCounters writes the counters line if one is due (issue 31 §1).
func (e *Edge) writeDueCounters() { e.counters.WriteDue(e.clock.Now()) }

// countersFirst is the ResponseWriter of a wrapped request: before the
// answer's first byte (its header) it writes the counters line that is due,
// so a failure the request counted is on stdout, and in Cloud Logging,
// while the instance still has CPU: with request-based billing Cloud Run
// gives it none once the answer is sent, and the fallback ticker may not
// run for minutes.
type countersFirst struct {
	http.ResponseWriter
	due  func()
	sent bool
}

func (w *countersFirst) WriteHeader(status int) {
	w.first()
	w.ResponseWriter.WriteHeader(status)
}

func (w *countersFirst) Write(b []byte) (int, error) {
	w.first()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (Flush,
// deadlines), as http.MaxBytesReader and the functions framework expect.
func (w *countersFirst) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *countersFirst) first() {
	if !w.sent {
		w.sent = true
		w.due()
	}
}

// panicError stands for a recovered panic; its value is never logged.
type panicError struct{}

func (panicError) Error() string { return "httpx: handler panicked" }

// InFlight returns the number of requests being served.
func (e *Edge) InFlight() int {
	e.drain.mu.Lock()
	defer e.drain.mu.Unlock()
	return e.drain.inflight
}
