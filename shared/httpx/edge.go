package httpx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
)

// SessionLookup resolves a bearer token to its host. It returns
// contract.ErrInvalidToken for an unknown token and contract.ErrSessionExpired
// for an expired one.
type SessionLookup func(ctx context.Context, token string) (host string, err error)

// Options configures an Edge.
type Options struct {
	Clock    clock.Clock
	Counters *obs.Counters
	Log      *slog.Logger
	// TrustedProxyHops is ORCA_PUSH_TRUSTED_PROXY_HOPS.
	TrustedProxyHops int
	// Ready probes the dependencies for GET /ready.
	Ready func(ctx context.Context) error
	// Lookup resolves bearer tokens.
	Lookup SessionLookup
	// Rejected, when set, is told of every request answered 400
	// invalid_request: the route pattern (such as "POST /v1/devices", never
	// the URL) and the decoder's reason ([contract.InvalidError]: the field
	// and the rule broken, never a value), or "" when there is none. The
	// emulator prints it for the person at the terminal; deployed functions
	// leave it unset and log counters only. It is optional, as is
	// TraceProject.
	Rejected func(route, reason string)
	// TraceProject is the Google Cloud project the process logs to; when
	// set (on Cloud Run), lines logged for a request carry its trace from
	// X-Cloud-Trace-Context ([obs.WithTrace]). Empty elsewhere.
	TraceProject string
}

// Edge is the per-process HTTP edge: its buckets, admission and drain state
// are shared by every function the process serves.
type Edge struct {
	errorWriter
	clock         clock.Clock
	hops          int
	traceProject  string
	lookup        SessionLookup
	unauth        *Buckets // challenge and session, per IP
	perInstance   *Buckets // challenge and session, per route pattern
	invalidBearer *Buckets // failed bearers, per IP
	perHost       *Buckets // authenticated requests, per host
	admission     *admission
	sessions      sessions // bearers' hosts, for AuthenticatedByCore
	drain         drain
	ready         readiness
}

// NewEdge returns an Edge. Every option but Rejected and TraceProject is
// required.
func NewEdge(o Options) (*Edge, error) {
	if o.Clock == nil || o.Counters == nil || o.Log == nil || o.Ready == nil || o.Lookup == nil {
		return nil, fmt.Errorf("httpx: NewEdge needs Clock, Counters, Log, Ready and Lookup")
	}
	rejected := o.Rejected
	if rejected == nil {
		rejected = func(route, reason string) {}
	}
	return &Edge{
		errorWriter:   errorWriter{counters: o.Counters, log: o.Log, rejected: rejected},
		clock:         o.Clock,
		hops:          o.TrustedProxyHops,
		traceProject:  o.TraceProject,
		lookup:        o.Lookup,
		unauth:        NewBuckets(contract.UnauthenticatedPerMinute),
		perInstance:   NewBuckets(contract.UnauthenticatedPerInstancePerMinute),
		invalidBearer: NewBuckets(contract.InvalidBearerPerMinute),
		perHost:       NewBuckets(contract.HostPerMinute),
		admission:     newAdmission(contract.AuthLookupsRunning, contract.AuthLookupsWaiting),
		ready:         readiness{probe: o.Ready, clock: o.Clock},
	}, nil
}

// Unauthenticated guards the two unauthenticated routes with the per-IP
// bucket they share, then with the instance's bucket of the route (its mux
// pattern, r.Pattern), which no count of addresses gets around (issue 26
// §2). It runs before the body is read, so an oversized request still spends
// a token (reference-behaviour §1.2). Authenticated routes never touch
// either bucket, so a flood of sign-ins leaves the hosts that hold a session
// alone.
func (e *Edge) Unauthenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := e.clock.Now()
		if !e.unauth.Allow(ClientIP(r, e.hops), now) {
			e.counters.Inc(obs.IPRateLimited)
			writeContractError(w, contract.ErrRateLimited)
			return
		}
		if !e.perInstance.Allow(r.Pattern, now) {
			e.counters.Inc(obs.InstanceRateLimited)
			writeContractError(w, contract.ErrRateLimited)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type hostKey struct{}

// Host returns the authenticated host fingerprint that [Edge.Authenticated]
// put in ctx, or "".
func Host(ctx context.Context) string {
	h, _ := ctx.Value(hostKey{}).(string)
	return h
}

// Authenticated runs the bearer checks of reference-behaviour §2.4 in order:
// the invalid-bearer budget of the client IP, the header, the session lookup
// under bounded admission, then the per-host bucket. It runs before the body
// cap, so an oversized unauthenticated request is 401, not 413.
func (e *Edge) Authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, err := e.authenticate(r)
		if err != nil {
			e.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), hostKey{}, host)))
	})
}

func (e *Edge) authenticate(r *http.Request) (string, error) {
	ip := ClientIP(r, e.hops)
	if !e.invalidBearer.Has(ip, e.clock.Now()) {
		return "", contract.ErrRateLimited
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		e.invalidBearer.Allow(ip, e.clock.Now())
		return "", contract.ErrInvalidToken
	}
	if !e.admission.acquire(r.Context()) {
		return "", contract.ErrBusy
	}
	defer e.admission.release()
	if !e.invalidBearer.Has(ip, e.clock.Now()) {
		return "", contract.ErrBusy
	}
	host, err := e.lookup(r.Context(), token)
	if err != nil {
		if errors.Is(err, contract.ErrInvalidToken) || errors.Is(err, contract.ErrSessionExpired) {
			e.invalidBearer.Allow(ip, e.clock.Now())
		}
		return "", err
	}
	if !e.perHost.Allow(host, e.clock.Now()) {
		return "", contract.ErrRateLimited
	}
	return host, nil
}

// bearer parses "Bearer <token>": split on the first space, the scheme in any
// case, the rest trimmed and not empty.
func bearer(h string) (string, bool) {
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	return rest, rest != ""
}

// readiness caches the result of the dependency probe for
// contract.ReadyCacheTTL, failures included, and shares one probe among
// concurrent callers.
type readiness struct {
	probe func(ctx context.Context) error
	clock clock.Clock
	group singleflight.Group
	// mu guards at and err.
	mu  sync.Mutex
	at  time.Time
	err error
	ok  bool
}

func (rd *readiness) check(ctx context.Context) error {
	now := rd.clock.Now()
	rd.mu.Lock()
	if rd.ok && now.Sub(rd.at) < contract.ReadyCacheTTL && !now.Before(rd.at) {
		err := rd.err
		rd.mu.Unlock()
		return err
	}
	rd.mu.Unlock()
	_, err, _ := rd.group.Do("ready", func() (any, error) {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		err := rd.probe(pctx)
		rd.mu.Lock()
		rd.at, rd.err, rd.ok = now, err, true
		rd.mu.Unlock()
		return nil, err
	})
	return err
}
