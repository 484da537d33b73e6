package config_test

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/seal/sealtest"
)

// TestPayloadKeys: ORCA_PUSH_PAYLOAD_KEYS is read into a ring, its first key
// sealing; a malformed ring is a VarError that holds no key; an unset one is
// accepted by Load (the emulator, the tools) and refused by CheckDeployed.
func TestPayloadKeys(t *testing.T) {
	const url = "https://push.onorca.dev"
	_, key, _ := strings.Cut(sealtest.Keys, ":")
	c, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_PAYLOAD_KEYS": "new:" + key + "," + sealtest.Keys,
		"ORCA_PUSH_DIGEST_KEY": sealtest.DigestKeyText})
	if err != nil {
		t.Fatal(err)
	}
	if ids := c.PayloadKeys.IDs(); len(ids) != 2 || ids[0] != "new" || ids[1] != "test1" {
		t.Fatalf("ring ids = %v", ids)
	}
	if err := c.CheckDeployed(); err != nil {
		t.Fatalf("CheckDeployed with keys = %v", err)
	}
	for _, bad := range []string{key, "k1:" + key[:40], "k1:" + key + ",k1:" + key, "k 1:" + key, "k1:" + key + ","} {
		_, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_PAYLOAD_KEYS": bad})
		if !names(err, "ORCA_PUSH_PAYLOAD_KEYS") {
			t.Errorf("Load(%q) = %v, want a VarError for ORCA_PUSH_PAYLOAD_KEYS", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), key[:20]) {
			t.Errorf("Load's error %q holds the key", err)
		}
	}
	c, err = load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_DIGEST_KEY": sealtest.DigestKeyText})
	if err != nil || c.PayloadKeys != nil {
		t.Fatalf("Load without keys = %v, %v", c.PayloadKeys, err)
	}
	if err := c.CheckDeployed(); !errors.Is(err, config.ErrNoPayloadKeys) || !names(err, "ORCA_PUSH_PAYLOAD_KEYS") ||
		errors.Is(err, config.ErrNoDigestKey) {
		t.Fatalf("CheckDeployed without keys = %v, want ErrNoPayloadKeys alone", err)
	}
}

// TestPayloadSealKey: ORCA_PUSH_PAYLOAD_SEAL_KEY names the ring's sealing
// key whatever its place, so a key can be added open-only (after the
// sealing one, or anywhere with the variable set); an id the ring lacks, or
// the variable without a ring, refuses to start.
func TestPayloadSealKey(t *testing.T) {
	const url = "https://push.onorca.dev"
	_, key, _ := strings.Cut(sealtest.Keys, ":")
	ring := sealtest.Keys + ",k2:" + key
	tests := []struct {
		sealKey string
		want    []string
	}{{"", []string{"test1", "k2"}}, {"k2", []string{"k2", "test1"}}, {" test1 ", []string{"test1", "k2"}}}
	for _, tt := range tests {
		c, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_PAYLOAD_KEYS": ring,
			"ORCA_PUSH_PAYLOAD_SEAL_KEY": tt.sealKey})
		if err != nil {
			t.Fatalf("ORCA_PUSH_PAYLOAD_SEAL_KEY=%q: %v", tt.sealKey, err)
		}
		if ids := c.PayloadKeys.IDs(); strings.Join(ids, ",") != strings.Join(tt.want, ",") {
			t.Errorf("ORCA_PUSH_PAYLOAD_SEAL_KEY=%q: ring ids = %v, want %v (sealing first)", tt.sealKey, ids, tt.want)
		}
	}
	for _, env := range []map[string]string{
		{"ORCA_PUSH_PAYLOAD_KEYS": ring, "ORCA_PUSH_PAYLOAD_SEAL_KEY": "k3"},
		{"ORCA_PUSH_PAYLOAD_SEAL_KEY": "k2"},
	} {
		env["ORCA_PUSH_PUBLIC_URL"] = url
		if _, err := load(env); !names(err, "ORCA_PUSH_PAYLOAD_SEAL_KEY") {
			t.Errorf("Load(%v) = %v, want a VarError for ORCA_PUSH_PAYLOAD_SEAL_KEY", env["ORCA_PUSH_PAYLOAD_SEAL_KEY"], err)
		}
	}
}

// TestDigestKey: ORCA_PUSH_DIGEST_KEY is read into the digest key; a
// malformed one is a VarError that holds no key; an unset one is accepted
// by Load and refused by CheckDeployed.
func TestDigestKey(t *testing.T) {
	const url = "https://push.onorca.dev"
	c, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_DIGEST_KEY": sealtest.DigestKeyText})
	if err != nil || c.DigestKey == nil {
		t.Fatalf("Load = %v, %v", c.DigestKey, err)
	}
	if got, want := c.DigestKey.Sum([]byte("x")), sealtest.DigestKey(t).Sum([]byte("x")); got != want {
		t.Fatalf("the digest key read sums %q, want %q", got, want)
	}
	key := sealtest.DigestKeyText
	for _, bad := range []string{key[:40], "k1:" + key, key + "AAAA"} {
		_, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_DIGEST_KEY": bad})
		if !names(err, "ORCA_PUSH_DIGEST_KEY") {
			t.Errorf("Load(%q) = %v, want a VarError for ORCA_PUSH_DIGEST_KEY", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), key[:20]) {
			t.Errorf("Load's error %q holds the key", err)
		}
	}
	c, err = load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_PAYLOAD_KEYS": sealtest.Keys})
	if err != nil || c.DigestKey != nil {
		t.Fatalf("Load without a digest key = %v, %v", c.DigestKey, err)
	}
	if err := c.CheckDeployed(); !errors.Is(err, config.ErrNoDigestKey) || !names(err, "ORCA_PUSH_DIGEST_KEY") ||
		errors.Is(err, config.ErrNoPayloadKeys) {
		t.Fatalf("CheckDeployed without a digest key = %v, want ErrNoDigestKey alone", err)
	}
}
