package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Challenge is a stored host challenge. Only a hash of the expected proof is
// kept, never the secret.
type Challenge struct {
	ID              string
	HostFingerprint string
	HostPublicKey   string // base64
	ProofHash       string
	Transcript      string // base64
	ExpiresAt       int64
	ConsumedAt      int64 // 0 while unused
}

// InsertChallenge stores a freshly issued challenge.
func (s *Store) InsertChallenge(ctx context.Context, c Challenge) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO push_challenges
		(challenge_id, host_fingerprint, host_public_key, secret_hash, transcript, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		c.ID, c.HostFingerprint, c.HostPublicKey, c.ProofHash, c.Transcript, c.ExpiresAt)
	if err != nil {
		return fmt.Errorf("insert challenge: %w", err)
	}
	return nil
}

// ErrNoRow is returned by lookups that find nothing.
var ErrNoRow = errors.New("store: no such row")

// Challenge reads a challenge; ErrNoRow when there is none.
func (t *Tx) Challenge(ctx context.Context, id string) (Challenge, error) {
	var c Challenge
	var consumed sql.NullInt64
	err := t.r.queryRow(ctx, `SELECT challenge_id, host_fingerprint, host_public_key,
		secret_hash, transcript, expires_at, consumed_at FROM push_challenges WHERE challenge_id = $1`, id).
		Scan(&c.ID, &c.HostFingerprint, &c.HostPublicKey, &c.ProofHash, &c.Transcript, &c.ExpiresAt, &consumed)
	if errors.Is(err, sql.ErrNoRows) {
		return Challenge{}, ErrNoRow
	}
	if err != nil {
		return Challenge{}, fmt.Errorf("read challenge: %w", err)
	}
	c.ConsumedAt = consumed.Int64
	return c, nil
}

// ConsumeChallenge marks a challenge used, only if it is still unused, and
// reports whether this call did it: two concurrent proofs cannot both win.
func (t *Tx) ConsumeChallenge(ctx context.Context, id string, now int64) (bool, error) {
	n, err := t.exec(ctx, `UPDATE push_challenges SET consumed_at = $2
		WHERE challenge_id = $1 AND consumed_at IS NULL`, id, now)
	if err != nil {
		return false, fmt.Errorf("consume challenge: %w", err)
	}
	return n == 1, nil
}

// TouchHost upserts push_hosts on a verified proof: created_at is kept, the
// key and last_seen_at are refreshed. It is a later write.
func (t *Tx) TouchHost(ctx context.Context, fingerprint, publicKey string, now int64) error {
	err := t.later(ctx, "touch host", `INSERT INTO push_hosts (host_fingerprint, host_public_key, created_at, last_seen_at)
		VALUES ($1, $2, $3, $3)
		ON CONFLICT (host_fingerprint) DO UPDATE SET host_public_key = excluded.host_public_key,
			last_seen_at = excluded.last_seen_at`, fingerprint, publicKey, now)
	if err != nil {
		return fmt.Errorf("touch host: %w", err)
	}
	return nil
}

// ReplaceSession deletes the host's session, if any, and stores the new one.
// Run it under HostTx so that concurrent sign-ins leave exactly one.
func (t *Tx) ReplaceSession(ctx context.Context, host, tokenHash string, expiresAt, now int64) error {
	if err := t.later(ctx, "delete session", `DELETE FROM push_sessions WHERE host_fingerprint = $1`, host); err != nil {
		return fmt.Errorf("replace session: %w", err)
	}
	if err := t.later(ctx, "insert session", `INSERT INTO push_sessions (token_hash, host_fingerprint, expires_at, created_at)
		VALUES ($1, $2, $3, $4)`, tokenHash, host, expiresAt, now); err != nil {
		return fmt.Errorf("replace session: %w", err)
	}
	return nil
}

// Session returns the host and expiry of the session whose token hashes to
// tokenHash; ErrNoRow when there is none.
func (s *Store) Session(ctx context.Context, tokenHash string) (host string, expiresAt int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT host_fingerprint, expires_at FROM push_sessions WHERE token_hash = $1`,
		tokenHash).Scan(&host, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, ErrNoRow
	}
	if err != nil {
		return "", 0, fmt.Errorf("read session: %w", err)
	}
	return host, expiresAt, nil
}
