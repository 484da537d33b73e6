package main

import (
	"crypto/rand"
	"strings"
	"testing"

	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/seal/sealtest"
)

// TestScan: a generated ring entry, anywhere in a line, a generated digest
// key set as its variable, and the emulator's key files are found, and the
// finding holds no key; the tests' printable keys, go.sum's hashes and
// ordinary base64 are not.
func TestScan(t *testing.T) {
	entry, err := seal.NewEntry(rand.Reader, "emulator1")
	if err != nil {
		t.Fatal(err)
	}
	digest, err := seal.NewDigestKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := strings.Cut(entry, ":")
	tests := []struct {
		name, file, text string
		found            int
	}{
		{"the emulator's committed ring", "scripts/emulator/data/push/payload-keys", entry + "\n", 2},
		{"a ring in an env file", "deploy/.env", "ORCA_PUSH_PAYLOAD_KEYS=k2:" + key + "," + entry, 2},
		{"a ring in Go", "x.go", `const ring = "` + entry + `"`, 1},
		{"a digest key in an env file", "deploy/.env", "ORCA_PUSH_DIGEST_KEY=" + digest, 1},
		{"an empty digest key file", "data/digest-key", "", 1},
		{"sealtest's keys", "shared/seal/sealtest/sealtest.go", sealtest.Keys + "\nORCA_PUSH_DIGEST_KEY=" + sealtest.DigestKeyText, 0},
		{"go.sum", "go.sum", "example.com/m v1.0.0 " + "h1:" + key, 0},
		{"a host's public key", "testdata/x.golden", `{"publicKeyB64":"` + digest + `"}`, 0},
	}
	for _, tt := range tests {
		got := scan(tt.file, []byte(tt.text))
		if len(got) != tt.found {
			t.Errorf("%s: scan = %q, want %d findings", tt.name, got, tt.found)
		}
		for _, f := range got {
			if strings.Contains(f, key[:20]) || strings.Contains(f, digest[:20]) {
				t.Errorf("%s: finding %q holds the key", tt.name, f)
			}
		}
	}
}
