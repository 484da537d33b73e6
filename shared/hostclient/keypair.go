package hostclient

import (
	"encoding/base64"
	"fmt"
	"io"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
)

// Keypair is a host's X25519 (nacl box) key pair, the desktop's E2EE key
// (contract "Identities"). The zero value holds no key; [New] refuses it.
type Keypair struct {
	public, secret [contract.KeyBytes]byte
}

// GenerateKeypair draws a fresh key pair from rand.
func GenerateKeypair(rand io.Reader) (Keypair, error) {
	pub, sec, err := box.GenerateKey(rand)
	if err != nil {
		return Keypair{}, fmt.Errorf("generate keypair: %w", err)
	}
	return Keypair{public: *pub, secret: *sec}, nil
}

// KeypairFromSecret rebuilds the key pair of a 32-byte secret key, as a
// desktop does from its stored key. It returns hostauth.ErrKeySize for a
// secret of another size.
func KeypairFromSecret(secret []byte) (Keypair, error) {
	if len(secret) != contract.KeyBytes {
		return Keypair{}, fmt.Errorf("keypair from secret: %w", hostauth.ErrKeySize)
	}
	pub, err := curve25519.X25519(secret, curve25519.Basepoint)
	if err != nil {
		return Keypair{}, fmt.Errorf("keypair from secret: %w", err)
	}
	var kp Keypair
	copy(kp.public[:], pub)
	copy(kp.secret[:], secret)
	return kp, nil
}

// PublicKey returns a copy of the raw 32-byte public key.
func (kp Keypair) PublicKey() []byte { return append([]byte(nil), kp.public[:]...) }

// PublicKeyB64 returns the public key in padded standard base64, the
// hostPublicKeyB64 of POST /v1/host/challenge.
func (kp Keypair) PublicKeyB64() string { return base64.StdEncoding.EncodeToString(kp.public[:]) }

// Fingerprint returns the host fingerprint of the public key
// ([hostauth.Fingerprint]).
func (kp Keypair) Fingerprint() string { return hostauth.Fingerprint(kp.public[:]) }

// String returns a fixed text, so that printing a Keypair with %v cannot
// reveal its secret key.
func (kp Keypair) String() string { return "hostclient.Keypair{…}" }

// GoString is [Keypair.String] for %#v.
func (kp Keypair) GoString() string { return kp.String() }

// isZero reports whether kp holds no key.
func (kp Keypair) isZero() bool { return kp.public == [contract.KeyBytes]byte{} }
