package hostclient

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"time"

	"golang.org/x/crypto/nacl/box"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
)

// Answer answers the challenge resp as a desktop does (reference-behaviour
// §3, "The host's side"): it opens the box with kp's secret key, splits the
// plaintext, parses the transcript, checks it against now, the wire answer,
// origin (the gateway's public URL as the host knows it) and kp, and returns
// the proof in padded standard base64 (44 characters). Each failed check
// returns its own error of the var block in errors.go.
func Answer(kp Keypair, origin string, resp contract.ChallengeResponse, now time.Time) (proofB64 string, err error) {
	ephemeralPub, nonce, ciphertext, err := decodeChallenge(resp)
	if err != nil {
		return "", fmt.Errorf("answer challenge: %w", err)
	}
	opened, ok := box.Open(nil, ciphertext, &nonce, &ephemeralPub, &kp.secret)
	if !ok {
		return "", fmt.Errorf("answer challenge: %w", ErrUnopenable)
	}
	transcript, secret, err := hostauth.SplitPlaintext(opened)
	if err != nil {
		return "", fmt.Errorf("answer challenge: %w", err)
	}
	t, err := hostauth.ParseTranscript(transcript)
	if err != nil {
		return "", fmt.Errorf("answer challenge: %w: %w", ErrTranscript, err)
	}
	if err := checkTimes(t, resp.ExpiresAt, now.UnixMilli()); err != nil {
		return "", fmt.Errorf("answer challenge: %w", err)
	}
	if err := checkFields(t, kp, origin, resp.ChallengeID, ephemeralPub[:], nonce[:]); err != nil {
		return "", fmt.Errorf("answer challenge: %w", err)
	}
	return base64.StdEncoding.EncodeToString(hostauth.Proof(secret, transcript)), nil
}

// decodeChallenge decodes the wire answer's ephemeral key, nonce and
// ciphertext, each canonical standard base64 of its size.
func decodeChallenge(resp contract.ChallengeResponse) (ephemeralPub [contract.KeyBytes]byte, nonce [contract.NonceBytes]byte, ciphertext []byte, err error) {
	pub, ok := contract.DecodeKey32(resp.GatewayEphemeralPublicKeyB64)
	n, okNonce := decodeCanonical(resp.NonceB64)
	ciphertext, okCiphertext := decodeCanonical(resp.CiphertextB64)
	if !ok || !okNonce || len(n) != contract.NonceBytes || !okCiphertext {
		return ephemeralPub, nonce, nil, ErrMalformedChallenge
	}
	copy(ephemeralPub[:], pub)
	copy(nonce[:], n)
	return ephemeralPub, nonce, ciphertext, nil
}

// decodeCanonical decodes padded standard base64 whose re-encoding
// round-trips.
func decodeCanonical(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// checkTimes applies the time checks in their reference order. The host
// allows contract.HostClockSkew either way because it judges times its own
// clock did not choose; the gateway allows none.
func checkTimes(t hostauth.Transcript, wireExpiresAt, nowMs int64) error {
	skew := contract.HostClockSkew.Milliseconds()
	switch {
	case t.IssuedAt > nowMs+skew:
		return ErrIssuedInFuture
	case t.ExpiresAt < nowMs-skew:
		return ErrExpired
	case t.IssuedAt > t.ExpiresAt:
		return ErrExpiresBeforeIssued
	case t.ExpiresAt-t.IssuedAt > contract.ChallengeTTL.Milliseconds():
		return ErrLifetime
	case t.ExpiresAt != wireExpiresAt:
		return ErrExpiresAtMismatch
	}
	return nil
}

// checkFields checks that the transcript names this gateway, this envelope
// and this host. Protocol and version were checked by the parser.
func checkFields(t hostauth.Transcript, kp Keypair, origin, challengeID string, ephemeralPub, nonce []byte) error {
	switch {
	case t.GatewayOrigin != origin:
		return &OriginError{Expected: origin, Received: t.GatewayOrigin}
	case !bytes.Equal(t.GatewayEphemeralPublicKey, ephemeralPub):
		return ErrEphemeralKey
	case !bytes.Equal(t.ChallengeNonce, nonce):
		return ErrNonce
	case t.ChallengeID != challengeID:
		return ErrChallengeID
	case t.HostFingerprint != kp.Fingerprint():
		return ErrFingerprint
	case !bytes.Equal(t.HostPublicKey, kp.public[:]):
		return ErrHostKey
	}
	return nil
}
