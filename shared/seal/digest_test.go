package seal_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/seal/sealtest"
)

// TestDigestKeyed: the digest is HMAC-SHA256 under the key, the same for
// the same bytes, and neither the plain SHA-256 of the bytes nor the digest
// under another key: a database copy without the key cannot reproduce it.
func TestDigestKeyed(t *testing.T) {
	d := sealtest.DigestKey(t)
	msg := []byte(`{"title":"Agent finished","body":""}`)
	raw, _ := base64.StdEncoding.DecodeString(sealtest.DigestKeyText)
	mac := hmac.New(sha256.New, raw)
	mac.Write(msg)
	want := hex.EncodeToString(mac.Sum(nil))
	if got := d.Sum(msg); got != want || d.Sum(msg) != want {
		t.Fatalf("Sum = %q, want HMAC-SHA256 %q", got, want)
	}
	plain := sha256.Sum256(msg)
	if d.Sum(msg) == hex.EncodeToString(plain[:]) {
		t.Fatal("Sum is the plain SHA-256")
	}
	otherText, err := seal.NewDigestKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := seal.ParseDigestKey(otherText)
	if err != nil {
		t.Fatal(err)
	}
	if other.Sum(msg) == want {
		t.Fatal("another key gives the same digest")
	}
	if d.Sum([]byte(`{"title":"Agent finished","body":"x"}`)) == want {
		t.Fatal("other bytes give the same digest")
	}
}

// TestParseDigestKeyRefuses: anything but 32 bytes in standard base64 is
// refused with an error that holds no key, and the key never prints.
func TestParseDigestKeyRefuses(t *testing.T) {
	key := sealtest.DigestKeyText
	for _, s := range []string{"", key[:40], key + "AAAA", "k1:" + key, strings.Repeat("!", 44)} {
		_, err := seal.ParseDigestKey(s)
		if err == nil {
			t.Errorf("ParseDigestKey(%q) accepted", s)
			continue
		}
		if strings.Contains(err.Error(), key[:20]) {
			t.Errorf("ParseDigestKey(%q) error %q holds the key", s, err)
		}
	}
	d := sealtest.DigestKey(t)
	raw, _ := base64.StdEncoding.DecodeString(key)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", d, d, d, d), fmt.Sprintf("%v", struct{ K *seal.DigestKey }{d})} {
		if strings.Contains(s, key[:20]) || strings.Contains(s, string(raw[:10])) {
			t.Fatalf("the digest key prints as %q", s)
		}
	}
}
