package httpx

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
)

// sessionTTL is how long a bearer's host is remembered without being looked
// up again. The route that trusts it verifies the session in its own first
// statement, so the time bounds memory, not correctness.
const sessionTTL = 10 * time.Minute

// sessions remembers, by token hash, the host of bearers the edge looked up,
// for [Edge.AuthenticatedByCore].
type sessions struct {
	// mu guards byHash.
	mu     sync.Mutex
	byHash map[string]cachedSession
}

// cachedSession is a remembered bearer: its host, until when.
type cachedSession struct {
	host  string
	until time.Time
}

func (s *sessions) get(hash string, now time.Time) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byHash[hash]
	if !ok || !now.Before(c.until) {
		return "", false
	}
	return c.host, true
}

// put remembers hash's host. Past contract.MaxTrackedBucketKeys bearers it
// starts afresh: a forgotten bearer costs one lookup.
func (s *sessions) put(hash, host string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byHash == nil || len(s.byHash) >= contract.MaxTrackedBucketKeys {
		s.byHash = make(map[string]cachedSession)
	}
	s.byHash[hash] = cachedSession{host: host, until: now.Add(sessionTTL)}
}

func (s *sessions) forget(hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byHash, hash)
}

// bearerKey carries the request's [Bearer] in its context.
type bearerKey struct{}

// Bearer is the authenticated bearer of a request that passed
// [Edge.AuthenticatedByCore].
type Bearer struct {
	// Host is the host the bearer's session belongs to, as the edge last
	// saw it.
	Host string
	// TokenHash is the bearer token's hash, the key of its session row.
	TokenHash string
}

// BearerOf returns the bearer of a request that passed
// [Edge.AuthenticatedByCore].
func BearerOf(ctx context.Context) Bearer {
	b, _ := ctx.Value(bearerKey{}).(Bearer)
	return b
}

// AuthenticatedByCore is [Edge.Authenticated] for a route whose core reads
// the bearer's session in its own first statement (POST /v1/send): a bearer
// the edge has looked up before is not looked up again, its host is taken
// from memory, so the request costs no round trip before its transaction.
// The checks run in the same order with the same answers; when the core
// then finds the session gone or expired (contract.ErrInvalidToken,
// contract.ErrSessionExpired), the bearer is forgotten and spends the
// client IP's invalid-bearer budget, as a failed lookup does. The request's
// context carries its [Bearer].
func (e *Edge) AuthenticatedByCore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := e.authenticateByCore(r)
		if err != nil {
			e.writeError(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), hostKey{}, b.Host)
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, bearerKey{}, b)))
	})
}

func (e *Edge) authenticateByCore(r *http.Request) (Bearer, error) {
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		_, err := e.authenticate(r)
		return Bearer{}, err
	}
	hash := hostauth.HashToken(token)
	now := e.clock.Now()
	if host, ok := e.sessions.get(hash, now); ok {
		ip := ClientIP(r, e.hops)
		switch {
		case !e.invalidBearer.Has(ip, now):
			return Bearer{}, contract.ErrRateLimited
		case !e.perHost.Allow(host, now):
			return Bearer{}, contract.ErrRateLimited
		}
		return Bearer{Host: host, TokenHash: hash}, nil
	}
	host, err := e.authenticate(r)
	if err != nil {
		return Bearer{}, err
	}
	e.sessions.put(hash, host, now)
	return Bearer{Host: host, TokenHash: hash}, nil
}

// refusedByCore forgets the bearer of r when its core refused the session
// (err), and spends the client IP's invalid-bearer budget as a failed lookup
// does.
func (e *Edge) refusedByCore(r *http.Request, err error) {
	if !errors.Is(err, contract.ErrInvalidToken) && !errors.Is(err, contract.ErrSessionExpired) {
		return
	}
	b := BearerOf(r.Context())
	if b.TokenHash == "" {
		return
	}
	e.sessions.forget(b.TokenHash)
	e.invalidBearer.Allow(ClientIP(r, e.hops), e.clock.Now())
}
