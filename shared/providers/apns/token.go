package apns

import (
	"fmt"
	"sync"
	"time"

	"github.com/sideshow/apns2/token"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
)

// signer holds the one provider token every request shares. apns2's own
// re-signing reads the wall clock; this one decides with the injected clock, so
// a manual clock drives it, and the token is never handed to apns2.
type signer struct {
	clock clock.Clock

	// mu guards tok and issued.
	mu     sync.Mutex
	tok    *token.Token
	issued time.Time
}

// newSigner signs tok's first token now, which validates the key.
func newSigner(c clock.Clock, tok *token.Token) (*signer, error) {
	if _, err := tok.Generate(); err != nil {
		return nil, fmt.Errorf("apns: sign provider token: %w", err)
	}
	return &signer{clock: c, tok: tok, issued: c.Now()}, nil
}

// bearer returns the current token, re-signed once contract.APNSTokenLifetime
// has passed since it was issued: at 50 min − 1 ms the same token, at 50 min
// a new one (reference-behaviour §7.1). Re-signing more often would meet
// APNs' TooManyProviderTokenUpdates.
func (s *signer) bearer() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.clock.Now(); now.Sub(s.issued) >= contract.APNSTokenLifetime {
		if _, err := s.tok.Generate(); err != nil {
			return "", fmt.Errorf("apns: sign provider token: %w", err)
		}
		s.issued = now
	}
	return s.tok.Bearer, nil
}

// expire makes the next bearer call re-sign, when APNs said that the token
// stale expired (ExpiredProviderToken) and it is still the current one:
// concurrent sends refused with one token re-sign it once, not once each
// (APNs answers TooManyProviderTokenUpdates to more than one update in 20
// minutes).
func (s *signer) expire(stale string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok.Bearer == stale {
		s.issued = time.Time{}
	}
}
