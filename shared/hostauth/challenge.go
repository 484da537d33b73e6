package hostauth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"

	"onorca.dev/push/shared/contract"
)

// proofLabel separates the proof's MAC input from the transcript: the input
// is ProofProtocol NUL "ack" NUL transcript (reference-behaviour §3, step 6).
//
// TODO(contract): move beside contract.ProofProtocol as ProofAckLabel.
const proofLabel = "ack"

// Seed is the random input of one challenge. [NewChallenge] draws it from its
// reader; tests pass a fixed one to [BuildChallenge].
type Seed struct {
	// EphemeralSecretKey is the gateway's one-challenge nacl box secret key;
	// its public key is derived from it.
	EphemeralSecretKey [contract.KeyBytes]byte
	// Nonce is the box nonce, also bound into the transcript.
	Nonce [contract.NonceBytes]byte
	// Secret is the challenge secret, the HMAC key of the proof. Only its
	// sealed form leaves this package.
	Secret [contract.SecretBytes]byte
}

// ephemeralPublicKey derives the public half of the ephemeral key pair, as
// box.GenerateKey does.
func (s *Seed) ephemeralPublicKey() ([]byte, error) {
	return curve25519.X25519(s.EphemeralSecretKey[:], curve25519.Basepoint)
}

// Challenge is an issued challenge: the wire answer for the host, and what
// the gateway keeps to verify the proof later.
type Challenge struct {
	// Response is the 200 answer of POST /v1/host/challenge.
	Response contract.ChallengeResponse
	// ProofHash is SHA-256 of the expected proof in unpadded base64url: the
	// only trace of the secret the gateway stores (reference-behaviour §3,
	// step 7). [CheckProof] compares a proof against it.
	ProofHash string
	// HostFingerprint is the fingerprint of the host public key.
	HostFingerprint string
	// ExpiresAt is the last millisecond at which a proof is accepted.
	ExpiresAt int64
	// Transcript is the encoded transcript the proof is bound to.
	Transcript []byte
}

// NewChallenge issues a challenge for hostPub, the canonically decoded host
// public key: it draws a fresh ephemeral key pair, nonce and secret from rand
// and calls [BuildChallenge]. origin is the gateway's public URL, challengeID
// a fresh opaque id, and issuedAt the current time in Unix milliseconds; the
// challenge expires contract.ChallengeTTL later. It returns ErrKeySize when
// hostPub is not 32 bytes and ErrWeakKey when it is a low-order point.
func NewChallenge(rand io.Reader, origin string, hostPub []byte, challengeID string, issuedAt int64) (Challenge, error) {
	var s Seed
	for _, b := range [][]byte{s.EphemeralSecretKey[:], s.Nonce[:], s.Secret[:]} {
		if _, err := io.ReadFull(rand, b); err != nil {
			return Challenge{}, fmt.Errorf("new challenge: read random: %w", err)
		}
	}
	return BuildChallenge(s, origin, hostPub, challengeID, issuedAt)
}

// BuildChallenge is [NewChallenge] with its random input given, so a test can
// reproduce a challenge byte for byte. It builds the transcript of
// reference-behaviour §3 and seals it, followed by the secret, to hostPub.
func BuildChallenge(s Seed, origin string, hostPub []byte, challengeID string, issuedAt int64) (Challenge, error) {
	ephemeralPub, err := s.ephemeralPublicKey()
	if err != nil {
		return Challenge{}, fmt.Errorf("build challenge: %w", err)
	}
	t := Transcript{
		GatewayOrigin:             origin,
		GatewayEphemeralPublicKey: ephemeralPub,
		ChallengeNonce:            s.Nonce[:],
		ChallengeID:               challengeID,
		IssuedAt:                  issuedAt,
		ExpiresAt:                 issuedAt + contract.ChallengeTTL.Milliseconds(),
		HostFingerprint:           Fingerprint(hostPub),
		HostPublicKey:             hostPub,
	}
	c, err := seal(s, t, hostPub)
	if err != nil {
		return Challenge{}, fmt.Errorf("build challenge: %w", err)
	}
	return c, nil
}

// seal encodes t verbatim and seals it with s to hostPub. The wire answer
// takes its ephemeral key and nonce from s and its id and expiry from t, so
// seal is also the seam through which tests craft lying transcripts.
func seal(s Seed, t Transcript, hostPub []byte) (Challenge, error) {
	if len(hostPub) != contract.KeyBytes {
		return Challenge{}, ErrKeySize
	}
	// box.Seal does not check the point it is given; X25519 does, and
	// fails when the shared secret is all zeros.
	if _, err := curve25519.X25519(s.EphemeralSecretKey[:], hostPub); err != nil {
		return Challenge{}, ErrWeakKey
	}
	transcript, err := t.Encode()
	if err != nil {
		return Challenge{}, err
	}
	ephemeralPub, err := s.ephemeralPublicKey()
	if err != nil {
		return Challenge{}, err
	}
	var to [contract.KeyBytes]byte
	copy(to[:], hostPub)
	ciphertext := box.Seal(nil, plaintext(transcript, s.Secret[:]), &s.Nonce, &to, &s.EphemeralSecretKey)
	return Challenge{
		Response: contract.ChallengeResponse{
			ChallengeID:                  t.ChallengeID,
			GatewayEphemeralPublicKeyB64: base64.StdEncoding.EncodeToString(ephemeralPub),
			NonceB64:                     base64.StdEncoding.EncodeToString(s.Nonce[:]),
			CiphertextB64:                base64.StdEncoding.EncodeToString(ciphertext),
			ExpiresAt:                    t.ExpiresAt,
		},
		ProofHash:       hashB64(Proof(s.Secret[:], transcript)),
		HostFingerprint: Fingerprint(hostPub),
		ExpiresAt:       t.ExpiresAt,
		Transcript:      transcript,
	}, nil
}

// plaintext returns ChallengeDomain NUL || u32be(len(transcript)) ||
// transcript || secret (reference-behaviour §3, step 4).
func plaintext(transcript, secret []byte) []byte {
	b := make([]byte, 0, len(contract.ChallengeDomain)+1+4+len(transcript)+len(secret))
	b = append(b, contract.ChallengeDomain...)
	b = append(b, 0)
	b = appendChunk(b, transcript)
	return append(b, secret...)
}

// SplitPlaintext is the host's reading of an opened challenge: it checks the
// domain prefix and that the transcript length leaves exactly a
// contract.SecretBytes secret, and returns both parts (aliasing p). It returns
// ErrChallengeDomain or ErrChallengeLength.
func SplitPlaintext(p []byte) (transcript, secret []byte, err error) {
	rest, ok := bytes.CutPrefix(p, []byte(contract.ChallengeDomain+"\x00"))
	if !ok {
		return nil, nil, fmt.Errorf("split challenge: %w", ErrChallengeDomain)
	}
	if len(rest) < 4+contract.SecretBytes ||
		uint64(binary.BigEndian.Uint32(rest)) != uint64(len(rest)-4-contract.SecretBytes) {
		return nil, nil, fmt.Errorf("split challenge: %w", ErrChallengeLength)
	}
	n := len(rest) - contract.SecretBytes
	return rest[4:n:n], rest[n:], nil
}

// Proof returns the answer to a challenge: HMAC-SHA256 keyed by secret over
// ProofProtocol NUL "ack" NUL transcript (reference-behaviour §3, step 6).
// The host sends it in standard base64; the gateway keeps only its hash.
func Proof(secret, transcript []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(contract.ProofProtocol + "\x00" + proofLabel + "\x00"))
	m.Write(transcript)
	return m.Sum(nil)
}
