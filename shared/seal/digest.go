package seal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
)

// DigestKey is the key of the keyed content digest (ORCA_PUSH_DIGEST_KEY):
// an event keeps HMAC-SHA256 of its notification under it, never a plain
// hash, so a copy of the database without the key cannot confirm a guessed
// title and body. It is its own key, not one of the payload ring's, so that
// the digest of the same content stays the same across payload-key
// rotations. It never prints its key and is safe for concurrent use.
type DigestKey struct {
	pool sync.Pool // of hash.Hash: HMAC-SHA256 under the key
}

// ParseDigestKey reads a digest key written as ORCA_PUSH_DIGEST_KEY is: 32
// bytes in standard base64 with padding. Its error never holds the key.
func ParseDigestKey(s string) (*DigestKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(raw) != KeySize {
		return nil, fmt.Errorf("the digest key must be %d bytes in standard base64", KeySize)
	}
	d := &DigestKey{}
	d.pool.New = func() any { return hmac.New(sha256.New, raw) }
	return d, nil
}

// NewDigestKey returns a new random digest key written as
// ORCA_PUSH_DIGEST_KEY is.
func NewDigestKey(rnd io.Reader) (string, error) {
	raw := make([]byte, KeySize)
	if _, err := io.ReadFull(rnd, raw); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// Sum returns the lower-case hex of HMAC-SHA256 of b under the key.
func (d *DigestKey) Sum(b []byte) string {
	h := d.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(b)
	var sum [sha256.Size]byte
	out := hex.EncodeToString(h.Sum(sum[:0]))
	d.pool.Put(h)
	return out
}

// String says what it is, never the key.
func (d *DigestKey) String() string { return "seal.DigestKey" }

// GoString is String, so that %#v prints no key either.
func (d *DigestKey) GoString() string { return d.String() }
