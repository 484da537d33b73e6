package hostclient_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/nacl/box"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
	"onorca.dev/push/shared/hostclient"
)

const (
	origin = "https://push.onorca.dev"
	nowMs  = int64(1_800_000_000_000)
)

// mustKeypairFrom returns the key pair whose secret key is 32 bytes of b.
func mustKeypairFrom(t *testing.T, b byte) hostclient.Keypair {
	t.Helper()
	kp, err := hostclient.KeypairFromSecret(bytes.Repeat([]byte{b}, contract.KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// testSeed is a fixed challenge seed.
func testSeed() hostauth.Seed {
	var s hostauth.Seed
	for i := range s.EphemeralSecretKey {
		s.EphemeralSecretKey[i] = 0x09
		s.Secret[i] = 0x05
	}
	for i := range s.Nonce {
		s.Nonce[i] = 0x03
	}
	return s
}

// honestTranscript is the transcript the gateway would issue at nowMs.
func honestTranscript(t *testing.T, kp hostclient.Keypair) hostauth.Transcript {
	t.Helper()
	c, err := hostauth.BuildChallenge(testSeed(), origin, kp.PublicKey(), "challenge-1", nowMs)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := hostauth.ParseTranscript(c.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// reseal replaces resp's ciphertext by a box, from the seed's ephemeral key to
// kp, of plaintext.
func reseal(resp *contract.ChallengeResponse, kp hostclient.Keypair, plaintext []byte) {
	s := testSeed()
	var to [contract.KeyBytes]byte
	copy(to[:], kp.PublicKey())
	resp.CiphertextB64 = base64.StdEncoding.EncodeToString(box.Seal(nil, plaintext, &s.Nonce, &to, &s.EphemeralSecretKey))
}

// layout builds a challenge plaintext by hand.
func layout(domain string, transcript, secret []byte) []byte {
	b := append([]byte(domain), 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(transcript)))
	b = append(b, transcript...)
	return append(b, secret...)
}

// TestAnswerChecks fails each host-side check of reference-behaviour §3 on
// its own: every case starts from an honest challenge and changes one thing.
func TestAnswerChecks(t *testing.T) {
	kp := mustKeypairFrom(t, 0x07)
	other := mustKeypairFrom(t, 0x0b)
	skew := contract.HostClockSkew.Milliseconds()
	ttl := contract.ChallengeTTL.Milliseconds()
	seed := testSeed()
	secret := seed.Secret[:]

	tests := []struct {
		name       string
		transcript func(*hostauth.Transcript)        // changes the sealed transcript
		rawT       func([]byte) []byte               // rewrites its encoding
		plaintext  func([]byte, []byte) []byte       // builds the plaintext from transcript and secret
		wire       func(*contract.ChallengeResponse) // changes the wire answer
		origin     string
		now        int64
		want       error
	}{
		{name: "honest"},
		{name: "issued at the skew limit", transcript: func(t *hostauth.Transcript) { t.IssuedAt, t.ExpiresAt = nowMs+skew, nowMs+skew+ttl }},
		{name: "expired at the skew limit", transcript: func(t *hostauth.Transcript) { t.IssuedAt, t.ExpiresAt = nowMs-skew-ttl, nowMs-skew }},
		{name: "zero lifetime", transcript: func(t *hostauth.Transcript) { t.ExpiresAt = t.IssuedAt }},

		{name: "malformed ephemeral key", wire: func(r *contract.ChallengeResponse) {
			r.GatewayEphemeralPublicKeyB64 = r.GatewayEphemeralPublicKeyB64[:43]
		}, want: hostclient.ErrMalformedChallenge},
		{name: "nonce of 18 bytes", wire: func(r *contract.ChallengeResponse) { r.NonceB64 = r.NonceB64[:24] }, want: hostclient.ErrMalformedChallenge},
		{name: "nonce non-canonical", wire: func(r *contract.ChallengeResponse) { r.NonceB64 += "=" }, want: hostclient.ErrMalformedChallenge},
		{name: "ciphertext not base64", wire: func(r *contract.ChallengeResponse) { r.CiphertextB64 = "*" + r.CiphertextB64[1:] }, want: hostclient.ErrMalformedChallenge},
		{name: "ciphertext tampered", wire: func(r *contract.ChallengeResponse) { r.CiphertextB64 = tamper(r.CiphertextB64) }, want: hostclient.ErrUnopenable},
		{name: "other ephemeral key on the wire", wire: func(r *contract.ChallengeResponse) { r.GatewayEphemeralPublicKeyB64 = other.PublicKeyB64() }, want: hostclient.ErrUnopenable},
		{name: "other nonce on the wire", wire: func(r *contract.ChallengeResponse) { r.NonceB64 = base64.StdEncoding.EncodeToString(make([]byte, 24)) }, want: hostclient.ErrUnopenable},

		{name: "other domain", plaintext: func(tr, s []byte) []byte { return layout("orca-relay-host-challenge/v1", tr, s) }, want: hostauth.ErrChallengeDomain},
		{name: "secret one byte short", plaintext: func(tr, s []byte) []byte { return layout(contract.ChallengeDomain, tr, s[:len(s)-1]) }, want: hostauth.ErrChallengeLength},
		{name: "secret one byte long", plaintext: func(tr, s []byte) []byte { return append(layout(contract.ChallengeDomain, tr, s), 0) }, want: hostauth.ErrChallengeLength},

		{name: "transcript with a trailing byte", rawT: func(b []byte) []byte { return append(b, 0) }, want: hostclient.ErrTranscript},
		{name: "protocol v2", rawT: replace("orca-push-host-proof/v1", "orca-push-host-proof/v2"), want: hostauth.ErrProtocol},
		{name: "version 2", rawT: replace("version\x00\x00\x00\x01\x01", "version\x00\x00\x00\x01\x02"), want: hostauth.ErrVersion},

		{name: "issued in the future", transcript: func(t *hostauth.Transcript) { t.IssuedAt, t.ExpiresAt = nowMs+skew+1, nowMs+skew+1+ttl }, want: hostclient.ErrIssuedInFuture},
		{name: "expired", transcript: func(t *hostauth.Transcript) { t.IssuedAt, t.ExpiresAt = nowMs-skew-1-ttl, nowMs-skew-1 }, want: hostclient.ErrExpired},
		{name: "expires before issued", transcript: func(t *hostauth.Transcript) { t.ExpiresAt = t.IssuedAt - 1 }, want: hostclient.ErrExpiresBeforeIssued},
		{name: "lives too long", transcript: func(t *hostauth.Transcript) { t.ExpiresAt = t.IssuedAt + ttl + 1 }, want: hostclient.ErrLifetime},
		{name: "wire expiresAt differs", wire: func(r *contract.ChallengeResponse) { r.ExpiresAt-- }, want: hostclient.ErrExpiresAtMismatch},
		{name: "other origin", origin: "https://push.example.com", want: hostclient.ErrOrigin},
		{name: "origin with a trailing slash", origin: origin + "/", want: hostclient.ErrOrigin},
		{name: "transcript names another ephemeral key", transcript: func(t *hostauth.Transcript) { t.GatewayEphemeralPublicKey = other.PublicKey() }, want: hostclient.ErrEphemeralKey},
		{name: "transcript names another nonce", transcript: func(t *hostauth.Transcript) { t.ChallengeNonce = make([]byte, contract.NonceBytes) }, want: hostclient.ErrNonce},
		{name: "wire challengeId differs", wire: func(r *contract.ChallengeResponse) { r.ChallengeID = "challenge-2" }, want: hostclient.ErrChallengeID},
		{name: "transcript names another fingerprint", transcript: func(t *hostauth.Transcript) { t.HostFingerprint = other.Fingerprint() }, want: hostclient.ErrFingerprint},
		{name: "transcript names another host key", transcript: func(t *hostauth.Transcript) { t.HostPublicKey = other.PublicKey() }, want: hostclient.ErrHostKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := honestTranscript(t, kp)
			if tt.transcript != nil {
				tt.transcript(&tr)
			}
			c, err := hostauth.SealForTest(testSeed(), tr, kp.PublicKey())
			if err != nil {
				t.Fatalf("SealForTest() error: %v", err)
			}
			transcript := c.Transcript
			if tt.rawT != nil || tt.plaintext != nil {
				if tt.rawT != nil {
					transcript = tt.rawT(bytes.Clone(transcript))
				}
				build := func(tr, s []byte) []byte { return layout(contract.ChallengeDomain, tr, s) }
				if tt.plaintext != nil {
					build = tt.plaintext
				}
				reseal(&c.Response, kp, build(transcript, secret))
			}
			if tt.wire != nil {
				tt.wire(&c.Response)
			}
			o := origin
			if tt.origin != "" {
				o = tt.origin
			}
			got, err := hostclient.Answer(kp, o, c.Response, time.UnixMilli(nowMs))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Answer() = %q, %v; want error %v", got, err, tt.want)
			}
			if tt.want != nil {
				return
			}
			if want := base64.StdEncoding.EncodeToString(hostauth.Proof(secret, transcript)); got != want {
				t.Errorf("Answer() = %q, want %q", got, want)
			}
			if !hostauth.CheckProof(got, c.ProofHash) {
				t.Errorf("CheckProof(Answer()) = false, want true")
			}
		})
	}
}

// replace returns a rewrite of the first old in a transcript by new.
func replace(old, new string) func([]byte) []byte {
	return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
}

// tamper flips a bit of the first byte of a base64 value.
func tamper(b64 string) string {
	b, _ := base64.StdEncoding.DecodeString(b64)
	b[0] ^= 1
	return base64.StdEncoding.EncodeToString(b)
}
