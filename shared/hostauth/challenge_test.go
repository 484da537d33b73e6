package hostauth_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
	"onorca.dev/push/shared/hostclient"
)

const (
	testOrigin = "https://push.onorca.dev"
	testID     = "challenge-1"
	testNow    = int64(1_800_000_000_000)
)

// mustKeypair returns a fresh host key pair.
func mustKeypair(t *testing.T) hostclient.Keypair {
	t.Helper()
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// TestRoundTrip issues a challenge, answers it as the host and checks the
// proof, then checks that bad proofs fail.
func TestRoundTrip(t *testing.T) {
	kp := mustKeypair(t)
	c, err := hostauth.NewChallenge(rand.Reader, testOrigin, kp.PublicKey(), testID, testNow)
	if err != nil {
		t.Fatalf("NewChallenge() error: %v", err)
	}
	if c.ExpiresAt != testNow+contract.ChallengeTTL.Milliseconds() || c.Response.ExpiresAt != c.ExpiresAt {
		t.Errorf("NewChallenge() expiresAt = %d (wire %d), want %d", c.ExpiresAt, c.Response.ExpiresAt, testNow+10_000)
	}
	if c.HostFingerprint != kp.Fingerprint() {
		t.Errorf("NewChallenge().HostFingerprint = %q, want %q", c.HostFingerprint, kp.Fingerprint())
	}
	proof, err := hostclient.Answer(kp, testOrigin, c.Response, time.UnixMilli(testNow))
	if err != nil {
		t.Fatalf("Answer() error: %v", err)
	}
	if len(proof) != 44 {
		t.Errorf("Answer() = %q, want 44 characters", proof)
	}
	if !hostauth.CheckProof(proof, c.ProofHash) {
		t.Fatalf("CheckProof(Answer(), ProofHash) = false, want true")
	}

	raw, _ := base64.StdEncoding.DecodeString(proof)
	flipped := bytes.Clone(raw)
	flipped[0] ^= 1
	tests := []struct {
		name  string
		proof string
	}{
		{"wrong proof", base64.StdEncoding.EncodeToString(flipped)},
		{"non-canonical padding bits", nonCanonical(proof)},
		{"unpadded", proof[:43]},
		{"24 bytes", base64.StdEncoding.EncodeToString(raw[:24])},
		{"33 bytes", base64.StdEncoding.EncodeToString(append(bytes.Clone(raw), 0))},
		{"empty", ""},
		{"the stored hash itself", c.ProofHash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.proof == proof {
				t.Fatalf("test proof %q equals the real one", tt.proof)
			}
			if hostauth.CheckProof(tt.proof, c.ProofHash) {
				t.Errorf("CheckProof(%q) = true, want false", tt.proof)
			}
		})
	}
}

// nonCanonical sets a padding bit of the last character of a 44-character
// base64 value: the same 32 bytes, spelled differently.
func nonCanonical(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	i := bytes.IndexByte([]byte(alphabet), s[42])
	return s[:42] + string(alphabet[i|1]) + s[43:]
}

// TestNonCanonicalSameBytes checks that the non-canonical spelling decodes
// (leniently) to the same bytes, so CheckProof refuses it for its spelling.
func TestNonCanonicalSameBytes(t *testing.T) {
	s := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa0}, 32))
	a, _ := base64.StdEncoding.DecodeString(s)
	b, err := base64.StdEncoding.DecodeString(nonCanonical(s))
	if err != nil || !bytes.Equal(a, b) || nonCanonical(s) == s {
		t.Fatalf("nonCanonical(%q) = %q decodes to %x, %v; want %x", s, nonCanonical(s), b, err, a)
	}
}

func TestNewChallengeUsesReader(t *testing.T) {
	kp := mustKeypair(t)
	random := make([]byte, contract.KeyBytes+contract.NonceBytes+contract.SecretBytes)
	for i := range random {
		random[i] = byte(i)
	}
	got, err := hostauth.NewChallenge(bytes.NewReader(random), testOrigin, kp.PublicKey(), testID, testNow)
	if err != nil {
		t.Fatalf("NewChallenge() error: %v", err)
	}
	var s hostauth.Seed
	copy(s.EphemeralSecretKey[:], random)
	copy(s.Nonce[:], random[contract.KeyBytes:])
	copy(s.Secret[:], random[contract.KeyBytes+contract.NonceBytes:])
	want, err := hostauth.BuildChallenge(s, testOrigin, kp.PublicKey(), testID, testNow)
	if err != nil {
		t.Fatalf("BuildChallenge() error: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewChallenge() mismatch with BuildChallenge() (-want +got):\n%s", diff)
	}
	if bytes.Contains(got.Transcript, s.Secret[:]) || bytes.Contains([]byte(got.ProofHash), []byte(base64.RawURLEncoding.EncodeToString(s.Secret[:]))) {
		t.Error("the challenge exposes its secret")
	}

	if _, err := hostauth.NewChallenge(bytes.NewReader(random[:40]), testOrigin, kp.PublicKey(), testID, testNow); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("NewChallenge(short reader) error = %v, want %v", err, io.ErrUnexpectedEOF)
	}
	if _, err := hostauth.NewChallenge(rand.Reader, testOrigin, kp.PublicKey()[:31], testID, testNow); !errors.Is(err, hostauth.ErrKeySize) {
		t.Errorf("NewChallenge(31-byte key) error = %v, want %v", err, hostauth.ErrKeySize)
	}
}

func TestSplitPlaintext(t *testing.T) {
	transcript := encodeFields(sampleFields())
	tl := uint32(len(transcript))
	secret := bytes.Repeat([]byte{5}, contract.SecretBytes)
	build := func(domain string, n uint32, secretLen int) []byte {
		b := append([]byte(domain), 0)
		b = binary.BigEndian.AppendUint32(b, n)
		b = append(b, transcript...)
		return append(b, secret[:secretLen]...)
	}
	good := build(contract.ChallengeDomain, tl, contract.SecretBytes)
	gotT, gotS, err := hostauth.SplitPlaintext(good)
	if err != nil || !bytes.Equal(gotT, transcript) || !bytes.Equal(gotS, secret) {
		t.Fatalf("SplitPlaintext(good) = %x, %x, %v; want %x, %x, nil", gotT, gotS, err, transcript, secret)
	}

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, hostauth.ErrChallengeDomain},
		{"other domain", build("orca-push-host-challenge/v2", tl, 32), hostauth.ErrChallengeDomain},
		{"relay domain", build("orca-relay-host-challenge/v1", tl, 32), hostauth.ErrChallengeDomain},
		{"space for NUL", bytes.Replace(good, []byte(contract.ChallengeDomain+"\x00"), []byte(contract.ChallengeDomain+" "), 1), hostauth.ErrChallengeDomain},
		{"domain only", good[:len(contract.ChallengeDomain)+1], hostauth.ErrChallengeLength},
		{"length cut", good[:len(contract.ChallengeDomain)+3], hostauth.ErrChallengeLength},
		{"length one short", build(contract.ChallengeDomain, tl-1, 32), hostauth.ErrChallengeLength},
		{"length one long", build(contract.ChallengeDomain, tl+1, 32), hostauth.ErrChallengeLength},
		{"length huge", build(contract.ChallengeDomain, 0xffffffff, 32), hostauth.ErrChallengeLength},
		{"secret short", build(contract.ChallengeDomain, tl, 31), hostauth.ErrChallengeLength},
		{"secret missing", build(contract.ChallengeDomain, tl, 0), hostauth.ErrChallengeLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := hostauth.SplitPlaintext(tt.in); !errors.Is(err, tt.want) {
				t.Errorf("SplitPlaintext() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSealForTest(t *testing.T) {
	kp := mustKeypair(t)
	tr := sampleTranscript()
	var s hostauth.Seed
	c, err := hostauth.SealForTest(s, tr, kp.PublicKey())
	if err != nil {
		t.Fatalf("SealForTest() error: %v", err)
	}
	want, _ := tr.Encode()
	if !bytes.Equal(c.Transcript, want) || c.Response.ChallengeID != tr.ChallengeID || c.ExpiresAt != tr.ExpiresAt {
		t.Errorf("SealForTest() = %+v, want the transcript verbatim", c)
	}
	if _, err := hostauth.SealForTest(s, tr, kp.PublicKey()[:16]); !errors.Is(err, hostauth.ErrKeySize) {
		t.Errorf("SealForTest(16-byte key) error = %v, want %v", err, hostauth.ErrKeySize)
	}
}

// lowOrderKeys are X25519 public keys whose shared secret with any secret
// key is zero: the points of order 1, 2, 4 and 8 and their non-canonical
// encodings (p, p+1, p−1 and the top bit set, which X25519 ignores), as
// libsodium's blocklist lists them.
var lowOrderKeys = []string{
	"0000000000000000000000000000000000000000000000000000000000000000",
	"0100000000000000000000000000000000000000000000000000000000000000",
	"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
	"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"0000000000000000000000000000000000000000000000000000000000000080",
	"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880",
}

// decodedLowOrderKeys returns lowOrderKeys as bytes.
func decodedLowOrderKeys(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, h := range lowOrderKeys {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestWeakHostKeys: a challenge is never sealed to a low-order public key,
// whose shared secret everyone knows; a real key passes.
func TestWeakHostKeys(t *testing.T) {
	for i, key := range decodedLowOrderKeys(t) {
		if _, err := hostauth.NewChallenge(rand.Reader, testOrigin, key, testID, testNow); !errors.Is(err, hostauth.ErrWeakKey) {
			t.Errorf("NewChallenge(low-order key %s) = %v, want ErrWeakKey", lowOrderKeys[i], err)
		}
	}
	if _, err := hostauth.NewChallenge(rand.Reader, testOrigin, mustKeypair(t).PublicKey(), testID, testNow); err != nil {
		t.Errorf("NewChallenge(real key) = %v", err)
	}
}
