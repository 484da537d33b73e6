package hostauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
)

// Options configures a Service.
type Options struct {
	Store    *store.Store
	Clock    clock.Clock
	Counters *obs.Counters
	// Origin is ORCA_PUSH_PUBLIC_URL, the transcript's gatewayOrigin.
	Origin string
	// Rand is the randomness source: crypto/rand.Reader, or a fixed stream
	// in tests.
	Rand io.Reader
}

// Service issues challenges, verifies proofs, mints sessions and resolves
// bearer tokens against the store (reference-behaviour §3).
type Service struct {
	store    *store.Store
	clock    clock.Clock
	counters *obs.Counters
	origin   string
	rand     io.Reader
}

// NewService returns a Service; every option is required.
func NewService(o Options) (*Service, error) {
	if o.Store == nil || o.Clock == nil || o.Counters == nil || o.Origin == "" || o.Rand == nil {
		return nil, errors.New("hostauth: NewService needs Store, Clock, Counters, Origin and Rand")
	}
	return &Service{store: o.Store, clock: o.Clock, counters: o.Counters, origin: o.Origin, rand: o.Rand}, nil
}

// IssueChallenge issues a challenge for the host key and stores only a hash
// of the expected proof. It writes no push_hosts row: the route is
// unauthenticated, so a host row would be a free permanent write. A
// low-order host key is contract.ErrInvalidRequest, counted as a rejected
// challenge.
func (s *Service) IssueChallenge(ctx context.Context, hostPub []byte) (contract.ChallengeResponse, error) {
	now := s.clock.Now().UnixMilli()
	c, err := NewChallenge(s.rand, s.origin, hostPub, uuid.NewString(), now)
	if errors.Is(err, ErrWeakKey) {
		s.counters.Inc(obs.ChallengeRejected)
		return contract.ChallengeResponse{}, fmt.Errorf("issue challenge: %w: %w", contract.ErrInvalidRequest, err)
	}
	if err != nil {
		return contract.ChallengeResponse{}, fmt.Errorf("issue challenge: %w", err)
	}
	err = s.store.InsertChallenge(ctx, store.Challenge{
		ID:              c.Response.ChallengeID,
		HostFingerprint: c.HostFingerprint,
		HostPublicKey:   base64.StdEncoding.EncodeToString(hostPub),
		ProofHash:       c.ProofHash,
		Transcript:      base64.StdEncoding.EncodeToString(c.Transcript),
		ExpiresAt:       c.ExpiresAt,
	})
	if err != nil {
		return contract.ChallengeResponse{}, fmt.Errorf("issue challenge: %w", err)
	}
	s.counters.Inc(obs.ChallengeIssued)
	return c.Response, nil
}

// CreateSession verifies a proof and mints the host's session. It returns
// contract.ErrInvalidChallenge for an unknown challenge and
// contract.ErrInvalidProof for a used, expired or wrong one. The challenge is
// consumed in one transaction, conditionally, so concurrent proofs of one
// challenge mint one session; the gateway allows no clock skew: a proof at
// expiresAt is accepted, one a millisecond later is not.
func (s *Service) CreateSession(ctx context.Context, req contract.SessionRequest) (contract.SessionResponse, error) {
	now := s.clock.Now().UnixMilli()
	var c store.Challenge
	err := s.store.Tx(ctx, func(tx *store.Tx) error {
		var err error
		c, err = tx.Challenge(ctx, req.ChallengeID)
		switch {
		case errors.Is(err, store.ErrNoRow):
			return contract.ErrInvalidChallenge
		case err != nil:
			return err
		case c.ConsumedAt != 0, now > c.ExpiresAt, !CheckProof(req.ProofB64, c.ProofHash):
			return contract.ErrInvalidProof
		}
		won, err := tx.ConsumeChallenge(ctx, c.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return contract.ErrInvalidProof
		}
		return tx.TouchHost(ctx, c.HostFingerprint, c.HostPublicKey, now)
	})
	if err != nil {
		if errors.Is(err, contract.ErrInvalidChallenge) || errors.Is(err, contract.ErrInvalidProof) {
			s.counters.Inc(obs.SessionRejected)
		}
		return contract.SessionResponse{}, fmt.Errorf("create session: %w", err)
	}
	token, hash, err := NewSessionToken(s.rand)
	if err != nil {
		return contract.SessionResponse{}, fmt.Errorf("create session: %w", err)
	}
	expires := now + contract.SessionTTL.Milliseconds()
	err = s.store.HostTx(ctx, c.HostFingerprint, func(tx *store.Tx) error {
		return tx.ReplaceSession(ctx, c.HostFingerprint, hash, expires, now)
	})
	if err != nil {
		return contract.SessionResponse{}, fmt.Errorf("create session: %w", err)
	}
	s.counters.Inc(obs.SessionIssued)
	return contract.SessionResponse{SessionToken: token, ExpiresAt: expires, HostFingerprint: c.HostFingerprint}, nil
}

// Lookup resolves a bearer token to its host. It returns
// contract.ErrInvalidToken for an unknown token (including one replaced by a
// newer sign-in) and contract.ErrSessionExpired after expiry; the final
// millisecond is still valid.
func (s *Service) Lookup(ctx context.Context, token string) (string, error) {
	host, expires, err := s.store.Session(ctx, HashToken(token))
	switch {
	case errors.Is(err, store.ErrNoRow):
		return "", contract.ErrInvalidToken
	case err != nil:
		return "", fmt.Errorf("lookup session: %w", err)
	case s.clock.Now().UnixMilli() > expires:
		return "", contract.ErrSessionExpired
	}
	return host, nil
}
