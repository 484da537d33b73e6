package hostauth_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
)

func TestNewSessionToken(t *testing.T) {
	random := bytes.Repeat([]byte{0xfb}, 32)
	token, hash, err := hostauth.NewSessionToken(bytes.NewReader(random))
	if err != nil {
		t.Fatalf("NewSessionToken() error: %v", err)
	}
	if want := base64.RawURLEncoding.EncodeToString(random); token != want {
		t.Errorf("NewSessionToken() token = %q, want %q", token, want)
	}
	if len(token) != 43 {
		t.Errorf("NewSessionToken() token has %d characters, want 43", len(token))
	}
	sum := sha256.Sum256([]byte(token))
	if want := base64.RawURLEncoding.EncodeToString(sum[:]); hash != want || hostauth.HashToken(token) != want {
		t.Errorf("NewSessionToken() hash = %q, HashToken() = %q, want %q", hash, hostauth.HashToken(token), want)
	}

	other, otherHash, err := hostauth.NewSessionToken(rand.Reader)
	if err != nil || other == token || otherHash == hash {
		t.Errorf("NewSessionToken(rand) = %q, %q, %v; want a different token", other, otherHash, err)
	}
	if _, _, err := hostauth.NewSessionToken(bytes.NewReader(random[:31])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("NewSessionToken(short reader) error = %v, want %v", err, io.ErrUnexpectedEOF)
	}
}

func TestFingerprint(t *testing.T) {
	for range 20 {
		key := make([]byte, contract.KeyBytes)
		rand.Read(key)
		fp := hostauth.Fingerprint(key)
		sum := sha256.Sum256(key)
		if want := base64.RawURLEncoding.EncodeToString(sum[:])[:16]; fp != want {
			t.Fatalf("Fingerprint(%x) = %q, want %q", key, fp, want)
		}
	}
}
