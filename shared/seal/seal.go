// Package seal keeps notification text sealed at rest under a key ring read
// from the environment (ORCA_PUSH_PAYLOAD_KEYS), and computes the keyed
// content digest events keep in its place ([DigestKey]).
//
// One key of the ring seals (the first, or the one [Ring.WithSealKey]
// names); every key of the ring opens what it sealed, named by the id stored
// beside each ciphertext, so a key can be handed to every instance as an
// opening key before any instance seals with it, and rotated while what the
// old one sealed is still pending. New seals are XChaCha20-Poly1305
// (golang.org/x/crypto/chacha20poly1305), whose random 192-bit nonces do not
// collide at any volume this gateway can reach; rows sealed before it,
// AES-256-GCM with 96-bit nonces, still open.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// KeySize is the size of a key: 32 bytes.
const KeySize = 32

var (
	// ErrUnopenable is the error of [Ring.Open] when no key of the ring
	// opens the sealed text: its key id is not in the ring
	// ([ErrKeyNotHeld], which wraps it), or it does not authenticate under
	// that key and additional data (another key of the same id, another
	// row's data, or changed bytes).
	ErrUnopenable = errors.New("seal: no key of the ring opens it")
	// ErrKeyNotHeld is the error of [Ring.Open] when the sealed text names
	// a key id the ring does not hold: another instance's ring may (a
	// rotation under way), so what it sealed is not known to be lost. It
	// wraps [ErrUnopenable].
	ErrKeyNotHeld = fmt.Errorf("%w: the ring holds no key of its id", ErrUnopenable)
)

// idPattern is what a key id may be: it is stored beside each ciphertext.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// xPrefix follows the key id in text sealed with XChaCha20-Poly1305; text
// sealed with AES-256-GCM has none. It cannot begin a GCM seal's base64,
// whose alphabet has no '.'.
const xPrefix = "x."

// xInfo is the HKDF info that derives a key's XChaCha20-Poly1305 key from
// the ring's 32 bytes, so that the two ciphers never share a key.
const xInfo = "orca-push/payload/xchacha20-poly1305"

// key is one key of a ring: the AES-256-GCM cipher of the rows sealed before
// XChaCha20-Poly1305, and the XChaCha20-Poly1305 cipher that seals now.
type key struct {
	id  string
	gcm cipher.AEAD
	x   cipher.AEAD
}

// Ring is a key ring: the key that seals, then the others, which only open.
// It never prints its keys.
type Ring struct {
	keys []key
}

// ParseRing reads a ring written as ORCA_PUSH_PAYLOAD_KEYS is:
// "id:key,id:key", the first key sealing (unless [Ring.WithSealKey] names
// another), each key 32 bytes in standard base64 with padding, each id
// 1..32 letters, digits, '-' or '_', ids unique. Its error names the entry
// at fault by position and never holds a key.
func ParseRing(s string) (*Ring, error) {
	r := &Ring{}
	seen := map[string]bool{}
	for i, entry := range strings.Split(s, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok || !idPattern.MatchString(id) {
			return nil, fmt.Errorf("entry %d must be id:key with an id of 1..32 letters, digits, '-' or '_'", i+1)
		}
		if seen[id] {
			return nil, fmt.Errorf("entry %d repeats an id", i+1)
		}
		seen[id] = true
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("entry %d: its key must be %d bytes in standard base64", i+1, KeySize)
		}
		k, err := newKey(id, raw)
		if err != nil {
			return nil, err
		}
		r.keys = append(r.keys, k)
	}
	return r, nil
}

func newKey(id string, raw []byte) (key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return key{}, fmt.Errorf("seal: %w", err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, fmt.Errorf("seal: %w", err)
	}
	xk, err := hkdf.Key(sha256.New, raw, nil, xInfo, chacha20poly1305.KeySize)
	if err != nil {
		return key{}, fmt.Errorf("seal: %w", err)
	}
	x, err := chacha20poly1305.NewX(xk)
	if err != nil {
		return key{}, fmt.Errorf("seal: %w", err)
	}
	return key{id: id, gcm: gcm, x: x}, nil
}

// WithSealKey returns the ring with the key of the given id sealing, the
// others opening only (ORCA_PUSH_PAYLOAD_SEAL_KEY). It returns an error,
// holding no key, when the ring has no such key.
func (r *Ring) WithSealKey(id string) (*Ring, error) {
	for i, k := range r.keys {
		if k.id == id {
			keys := append([]key{k}, r.keys[:i]...)
			return &Ring{keys: append(keys, r.keys[i+1:]...)}, nil
		}
	}
	return nil, fmt.Errorf("seal: the ring has no key %q to seal with", id)
}

// NewEntry returns a new random key with the given id, written as one entry
// of ORCA_PUSH_PAYLOAD_KEYS ("id:key").
func NewEntry(rnd io.Reader, id string) (string, error) {
	if !idPattern.MatchString(id) {
		return "", fmt.Errorf("seal: key id must be 1..32 letters, digits, '-' or '_'")
	}
	raw := make([]byte, KeySize)
	if _, err := io.ReadFull(rnd, raw); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	return id + ":" + base64.StdEncoding.EncodeToString(raw), nil
}

// IDs returns the ring's key ids, the sealing one first.
func (r *Ring) IDs() []string {
	ids := make([]string, len(r.keys))
	for i, k := range r.keys {
		ids[i] = k.id
	}
	return ids
}

// String names the ring's keys by id only, the sealing one first.
func (r *Ring) String() string { return "seal.Ring" + fmt.Sprint(r.IDs()) }

// GoString is String, so that %#v prints no key either.
func (r *Ring) GoString() string { return r.String() }

// Seal appends to dst the plaintext sealed with XChaCha20-Poly1305 under the
// sealing key and bound to ad, written as "id:x." and the standard base64 of
// the random 24-byte nonce and the ciphertext: text without a quote, a
// backslash or a comma's meaning in JSON.
func (r *Ring) Seal(dst, plaintext, ad []byte) []byte {
	k := r.keys[0]
	buf := make([]byte, k.x.NonceSize(), k.x.NonceSize()+len(plaintext)+k.x.Overhead())
	rand.Read(buf) // never fails (crypto/rand)
	buf = k.x.Seal(buf, buf, plaintext, ad)
	dst = append(dst, k.id...)
	dst = append(dst, ':')
	dst = append(dst, xPrefix...)
	return base64.StdEncoding.AppendEncode(dst, buf)
}

// SealedLen is the number of bytes Seal appends for a plaintext of n bytes.
func (r *Ring) SealedLen(n int) int {
	k := r.keys[0]
	return len(k.id) + 1 + len(xPrefix) + base64.StdEncoding.EncodedLen(k.x.NonceSize()+n+k.x.Overhead())
}

// Open appends to dst the plaintext Seal sealed into sealed with the same
// ad, XChaCha20-Poly1305 or (sealed before it) AES-256-GCM. It returns
// ErrKeyNotHeld when the ring holds no key of sealed's id, and ErrUnopenable
// when that key does not open it. It opens in dst's spare capacity: with
// enough of it, it allocates only the nonce.
func (r *Ring) Open(dst, sealed, ad []byte) ([]byte, error) {
	i := bytes.IndexByte(sealed, ':')
	if i < 0 {
		return dst, ErrUnopenable
	}
	id, body := sealed[:i], sealed[i+1:]
	for _, k := range r.keys {
		if k.id != string(id) {
			continue
		}
		aead := k.gcm
		if rest, ok := bytes.CutPrefix(body, []byte(xPrefix)); ok {
			aead, body = k.x, rest
		}
		return open(aead, dst, body, ad)
	}
	return dst, ErrKeyNotHeld
}

// open opens b64, the standard base64 of a nonce and a ciphertext, with
// aead into dst's spare capacity.
func open(aead cipher.AEAD, dst, b64, ad []byte) ([]byte, error) {
	start := len(dst)
	buf, err := base64.StdEncoding.AppendDecode(dst, b64)
	n := aead.NonceSize()
	if err != nil || len(buf)-start < n+aead.Overhead() {
		return dst, ErrUnopenable
	}
	// The nonce moves out and the ciphertext to start, where it is opened
	// in place (the exact overlap cipher.AEAD allows).
	var nonce [chacha20poly1305.NonceSizeX]byte
	copy(nonce[:], buf[start:start+n])
	ct := buf[start : start+copy(buf[start:], buf[start+n:])]
	out, err := aead.Open(buf[:start], nonce[:n], ct, ad)
	if err != nil {
		return dst, ErrUnopenable
	}
	return out, nil
}
