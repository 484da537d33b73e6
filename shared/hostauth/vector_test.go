package hostauth_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
	"onorca.dev/push/shared/hostclient"
)

// vectorPath is the host-proof vector real desktops test against; the
// repository sits beside /work/shared.
const vectorPath = "../../../shared/vectors/host-proof-vector.json"

// wantVectorProof is the host's answer the vector README states.
const wantVectorProof = "2Nh9zDL6YwmjYRFXcaAxYXA4tChm37/XZNR3ilucdsQ="

// vectorEphemeralSecretByte is the gateway ephemeral secret key of the
// vector: the vector gives only the public key, but it is 32 bytes of 0x09
// (mustVector checks that it derives the vector's public key), in the style
// of the vector's other keys (host 0x07, nonce 0x03, secret 0x05).
const vectorEphemeralSecretByte = 0x09

// vector is host-proof-vector.json with its base64 fields decoded.
type vector struct {
	HostSecretKey   []byte
	HostPublicKey   []byte
	HostFingerprint string
	Origin          string
	Challenge       contract.ChallengeResponse
	EphemeralPublic []byte
	Nonce           []byte
	Ciphertext      []byte
	IssuedAt        int64
	Secret          []byte
	Transcript      []byte
}

// mustVector reads the vector, or skips the test when the file is missing.
func mustVector(t *testing.T) vector {
	t.Helper()
	data, err := os.ReadFile(vectorPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("host-proof vector not found at %s (the repository must sit beside /work/shared)", vectorPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		HostSecretKeyB64   string                     `json:"hostSecretKeyB64"`
		HostPublicKeyB64   string                     `json:"hostPublicKeyB64"`
		HostFingerprint    string                     `json:"hostFingerprint"`
		GatewayOrigin      string                     `json:"gatewayOrigin"`
		Challenge          contract.ChallengeResponse `json:"challenge"`
		IssuedAt           int64                      `json:"issuedAt"`
		ChallengeSecretB64 string                     `json:"challengeSecretB64"`
		TranscriptB64      string                     `json:"transcriptB64"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("decode vector: %v", err)
	}
	b64 := func(s string) []byte {
		t.Helper()
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("vector base64 %q: %v", s, err)
		}
		return b
	}
	v := vector{
		HostSecretKey:   b64(raw.HostSecretKeyB64),
		HostPublicKey:   b64(raw.HostPublicKeyB64),
		HostFingerprint: raw.HostFingerprint,
		Origin:          raw.GatewayOrigin,
		Challenge:       raw.Challenge,
		EphemeralPublic: b64(raw.Challenge.GatewayEphemeralPublicKeyB64),
		Nonce:           b64(raw.Challenge.NonceB64),
		Ciphertext:      b64(raw.Challenge.CiphertextB64),
		IssuedAt:        raw.IssuedAt,
		Secret:          b64(raw.ChallengeSecretB64),
		Transcript:      b64(raw.TranscriptB64),
	}
	seed := vectorSeed(t, v)
	if pub, _ := curve25519.X25519(seed.EphemeralSecretKey[:], curve25519.Basepoint); !bytes.Equal(pub, v.EphemeralPublic) {
		t.Fatalf("0x%02x×32 no longer derives the vector's ephemeral public key", vectorEphemeralSecretByte)
	}
	return v
}

// vectorSeed returns the random input the vector's challenge was built from.
func vectorSeed(t *testing.T, v vector) hostauth.Seed {
	t.Helper()
	var s hostauth.Seed
	copy(s.EphemeralSecretKey[:], bytes.Repeat([]byte{vectorEphemeralSecretByte}, contract.KeyBytes))
	if copy(s.Nonce[:], v.Nonce) != contract.NonceBytes || copy(s.Secret[:], v.Secret) != contract.SecretBytes {
		t.Fatal("vector nonce or secret has the wrong size")
	}
	return s
}

func TestVectorFingerprint(t *testing.T) {
	v := mustVector(t)
	if got := hostauth.Fingerprint(v.HostPublicKey); got != v.HostFingerprint {
		t.Errorf("Fingerprint(vector key) = %q, want %q", got, v.HostFingerprint)
	}
}

func TestVectorTranscript(t *testing.T) {
	v := mustVector(t)
	want := hostauth.Transcript{
		GatewayOrigin:             v.Origin,
		GatewayEphemeralPublicKey: v.EphemeralPublic,
		ChallengeNonce:            v.Nonce,
		ChallengeID:               v.Challenge.ChallengeID,
		IssuedAt:                  v.IssuedAt,
		ExpiresAt:                 v.Challenge.ExpiresAt,
		HostFingerprint:           v.HostFingerprint,
		HostPublicKey:             v.HostPublicKey,
	}
	got, err := want.Encode()
	if err != nil {
		t.Fatalf("Encode() error: %v", err)
	}
	if !bytes.Equal(got, v.Transcript) {
		t.Errorf("Encode() = %s, want %s", base64.StdEncoding.EncodeToString(got), base64.StdEncoding.EncodeToString(v.Transcript))
	}
	parsed, err := hostauth.ParseTranscript(v.Transcript)
	if err != nil {
		t.Fatalf("ParseTranscript(vector) error: %v", err)
	}
	if diff := cmp.Diff(want, parsed); diff != "" {
		t.Errorf("ParseTranscript(vector) mismatch (-want +got):\n%s", diff)
	}
}

func TestVectorPlaintext(t *testing.T) {
	v := mustVector(t)
	var nonce [contract.NonceBytes]byte
	var ephemeral, hostSecret [contract.KeyBytes]byte
	copy(nonce[:], v.Nonce)
	copy(ephemeral[:], v.EphemeralPublic)
	copy(hostSecret[:], v.HostSecretKey)
	opened, ok := box.Open(nil, v.Ciphertext, &nonce, &ephemeral, &hostSecret)
	if !ok {
		t.Fatal("the vector's ciphertext does not open with the host secret key")
	}
	want := []byte("orca-push-host-challenge/v1\x00")
	want = binary.BigEndian.AppendUint32(want, uint32(len(v.Transcript)))
	want = append(want, v.Transcript...)
	want = append(want, v.Secret...)
	if !bytes.Equal(opened, want) {
		t.Errorf("opened plaintext = %x, want %x", opened, want)
	}
	transcript, secret, err := hostauth.SplitPlaintext(opened)
	if err != nil {
		t.Fatalf("SplitPlaintext(vector) error: %v", err)
	}
	if !bytes.Equal(transcript, v.Transcript) || !bytes.Equal(secret, v.Secret) {
		t.Errorf("SplitPlaintext(vector) = %x, %x; want %x, %x", transcript, secret, v.Transcript, v.Secret)
	}
}

// TestVectorChallenge rebuilds the vector's challenge, ciphertext included,
// with the gateway's own code.
func TestVectorChallenge(t *testing.T) {
	v := mustVector(t)
	c, err := hostauth.BuildChallenge(vectorSeed(t, v), v.Origin, v.HostPublicKey, v.Challenge.ChallengeID, v.IssuedAt)
	if err != nil {
		t.Fatalf("BuildChallenge() error: %v", err)
	}
	if diff := cmp.Diff(v.Challenge, c.Response); diff != "" {
		t.Errorf("BuildChallenge().Response mismatch (-want +got):\n%s", diff)
	}
	if !bytes.Equal(c.Transcript, v.Transcript) {
		t.Errorf("BuildChallenge().Transcript = %x, want %x", c.Transcript, v.Transcript)
	}
	if c.HostFingerprint != v.HostFingerprint || c.ExpiresAt != v.Challenge.ExpiresAt {
		t.Errorf("BuildChallenge() = fingerprint %q, expiresAt %d; want %q, %d", c.HostFingerprint, c.ExpiresAt, v.HostFingerprint, v.Challenge.ExpiresAt)
	}
	if !hostauth.CheckProof(wantVectorProof, c.ProofHash) {
		t.Errorf("CheckProof(%q, BuildChallenge().ProofHash) = false, want true", wantVectorProof)
	}
}

func TestVectorProof(t *testing.T) {
	v := mustVector(t)
	if got := base64.StdEncoding.EncodeToString(hostauth.Proof(v.Secret, v.Transcript)); got != wantVectorProof {
		t.Errorf("Proof(vector) = %q, want %q", got, wantVectorProof)
	}
}

func TestVectorAnswer(t *testing.T) {
	v := mustVector(t)
	kp, err := hostclient.KeypairFromSecret(v.HostSecretKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kp.PublicKey(), v.HostPublicKey) {
		t.Fatalf("KeypairFromSecret(vector).PublicKey() = %x, want %x", kp.PublicKey(), v.HostPublicKey)
	}
	now := time.UnixMilli(v.IssuedAt + 1000)
	got, err := hostclient.Answer(kp, v.Origin, v.Challenge, now)
	if err != nil {
		t.Fatalf("Answer(vector, issuedAt+1000) error: %v", err)
	}
	if got != wantVectorProof {
		t.Errorf("Answer(vector, issuedAt+1000) = %q, want %q", got, wantVectorProof)
	}
}
