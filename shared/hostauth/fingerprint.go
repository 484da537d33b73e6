package hostauth

import (
	"crypto/sha256"
	"encoding/base64"

	"onorca.dev/push/shared/contract"
)

// Fingerprint returns the host fingerprint of the raw public key pub: its
// SHA-256 in unpadded base64url, cut to contract.FingerprintChars characters.
// It is the derivation of the relay host id and of the phone's lookup
// (contract "Identities"), so it must never change.
func Fingerprint(pub []byte) string {
	return hashB64(pub)[:contract.FingerprintChars]
}

// hashB64 returns SHA-256 of b in unpadded base64url, the form in which the
// original gateway stores every digest (Node's digest("base64url")).
func hashB64(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
