// Package sealtest gives tests a fixed payload key ring and digest key. Both
// keys are printable text, which is how scripts/keyscan tells a test's key
// from one that was generated.
package sealtest

import (
	"testing"

	"onorca.dev/push/shared/seal"
)

// Keys is a ring of one fixed key, "test1", written as ORCA_PUSH_PAYLOAD_KEYS
// is: for tests only.
const Keys = "test1:dGVzdC1vbmx5LXBheWxvYWQta2V5LTMyLWJ5dGVzISE="

// DigestKeyText is a fixed digest key written as ORCA_PUSH_DIGEST_KEY is: for
// tests only.
const DigestKeyText = "dGVzdC1vbmx5LWRpZ2VzdC1rZXktb2YtMzItYnl0ZXM="

// Ring returns the ring Keys writes.
func Ring(t testing.TB) *seal.Ring {
	t.Helper()
	r, err := seal.ParseRing(Keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// DigestKey returns the digest key DigestKeyText writes.
func DigestKey(t testing.TB) *seal.DigestKey {
	t.Helper()
	d, err := seal.ParseDigestKey(DigestKeyText)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
