// Package sealtest gives tests a fixed payload key ring.
package sealtest

import (
	"testing"

	"onorca.dev/push/shared/seal"
)

// Keys is a ring of one fixed key, "test1", written as ORCA_PUSH_PAYLOAD_KEYS
// is: for tests only.
const Keys = "test1:dGVzdC1vbmx5LXBheWxvYWQta2V5LTMyLWJ5dGVzISE="

// Ring returns the ring Keys writes.
func Ring(t testing.TB) *seal.Ring {
	t.Helper()
	r, err := seal.ParseRing(Keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
