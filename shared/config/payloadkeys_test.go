package config_test

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/seal/sealtest"
)

// TestPayloadKeys: ORCA_PUSH_PAYLOAD_KEYS is read into a ring, current key
// first; a malformed ring is a VarError that holds no key; an unset one is
// accepted by Load (the emulator, the tools) and refused by CheckDeployed.
func TestPayloadKeys(t *testing.T) {
	const url = "https://push.onorca.dev"
	_, key, _ := strings.Cut(sealtest.Keys, ":")
	c, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url, "ORCA_PUSH_PAYLOAD_KEYS": "new:" + key + "," + sealtest.Keys})
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
	c, err = load(map[string]string{"ORCA_PUSH_PUBLIC_URL": url})
	if err != nil || c.PayloadKeys != nil {
		t.Fatalf("Load without keys = %v, %v", c.PayloadKeys, err)
	}
	if err := c.CheckDeployed(); !errors.Is(err, config.ErrNoPayloadKeys) || !names(err, "ORCA_PUSH_PAYLOAD_KEYS") {
		t.Fatalf("CheckDeployed without keys = %v, want ErrNoPayloadKeys", err)
	}
}
