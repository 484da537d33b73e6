package hostauth

import (
	"encoding/base64"
	"fmt"
	"io"
)

// sessionTokenBytes is the entropy of a session token: 32 random bytes, 43
// base64url characters (reference-behaviour §3, "Session minting").
//
// TODO(contract): move to contract as SessionTokenBytes.
const sessionTokenBytes = 32

// NewSessionToken draws a session token from rand: 32 random bytes in
// unpadded base64url (43 characters), the bearer the host sends. hash is
// [HashToken] of it, the only form the gateway stores.
func NewSessionToken(rand io.Reader) (token, hash string, err error) {
	var b [sessionTokenBytes]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", "", fmt.Errorf("new session token: read random: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token), nil
}

// HashToken returns the stored form of a session token: SHA-256 of its text
// in unpadded base64url. A bearer is looked up by this hash.
func HashToken(token string) string { return hashB64([]byte(token)) }
