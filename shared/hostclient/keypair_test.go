package hostclient_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/hostauth"
	"onorca.dev/push/shared/hostclient"
)

func TestKeypair(t *testing.T) {
	secret := bytes.Repeat([]byte{0x07}, 32)
	kp, err := hostclient.KeypairFromSecret(secret)
	if err != nil {
		t.Fatalf("KeypairFromSecret() error: %v", err)
	}
	// The vector's host key pair (vectors/host-proof-vector.json).
	if got, want := kp.PublicKeyB64(), "E75P6uryBMf9M1j8nAByGIHRdCeBKCJ+xnTzf3/pe20="; got != want {
		t.Errorf("PublicKeyB64() = %q, want %q", got, want)
	}
	if got, want := kp.Fingerprint(), "D20lU_8MD0R64gLt"; got != want {
		t.Errorf("Fingerprint() = %q, want %q", got, want)
	}
	generated, err := hostclient.GenerateKeypair(bytes.NewReader(secret))
	if err != nil {
		t.Fatalf("GenerateKeypair() error: %v", err)
	}
	if generated.PublicKeyB64() != kp.PublicKeyB64() {
		t.Errorf("GenerateKeypair(0x07…) = %s, want %s", generated.PublicKeyB64(), kp.PublicKeyB64())
	}
	pub := kp.PublicKey()
	pub[0] ^= 1
	if kp.PublicKey()[0] == pub[0] {
		t.Error("PublicKey() returned the key pair's own array")
	}
	printed := fmt.Sprintf("%v %+v %#v %s", kp, kp, kp, kp)
	for _, s := range []string{base64.StdEncoding.EncodeToString(secret), "7 7 7", "0x7"} {
		if strings.Contains(printed, s) {
			t.Errorf("printing a Keypair shows its secret: %s", printed)
		}
	}
	for _, n := range []int{0, 31, 33} {
		if _, err := hostclient.KeypairFromSecret(make([]byte, n)); !errors.Is(err, hostauth.ErrKeySize) {
			t.Errorf("KeypairFromSecret(%d bytes) error = %v, want %v", n, err, hostauth.ErrKeySize)
		}
	}
	if _, err := hostclient.GenerateKeypair(bytes.NewReader(secret[:10])); err == nil {
		t.Error("GenerateKeypair(short reader) error = nil, want an error")
	}
}
