// Package seal keeps notification text sealed at rest: AES-256-GCM (crypto/aes,
// crypto/cipher) under a key ring read from the environment
// (ORCA_PUSH_PAYLOAD_KEYS). The ring's first key seals; every key of the ring
// opens what it sealed, named by the id stored beside each ciphertext, so a
// key can be rotated while what the old one sealed is still pending.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// ErrUnopenable is the error of [Ring.Open] when no key of the ring opens
// the sealed text: its key id is unknown, or it does not authenticate under
// that key and additional data (another key of the same id, another row's
// data, or changed bytes).
var ErrUnopenable = errors.New("seal: no key of the ring opens it")

// idPattern is what a key id may be: it is stored beside each ciphertext.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// key is one key of a ring.
type key struct {
	id   string
	aead cipher.AEAD
}

// Ring is a key ring: the current key, which seals, then older ones, which
// only open. It never prints its keys.
type Ring struct {
	keys []key
}

// ParseRing reads a ring written as ORCA_PUSH_PAYLOAD_KEYS is:
// "id:key,id:key", the current key first, each key 32 bytes in standard
// base64 with padding, each id 1..32 letters, digits, '-' or '_', ids unique.
// Its error names the entry at fault by position and never holds a key.
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
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, fmt.Errorf("seal: %w", err)
	}
	return key{id: id, aead: aead}, nil
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

// IDs returns the ring's key ids, the current one first.
func (r *Ring) IDs() []string {
	ids := make([]string, len(r.keys))
	for i, k := range r.keys {
		ids[i] = k.id
	}
	return ids
}

// String names the ring's keys by id only.
func (r *Ring) String() string { return "seal.Ring" + fmt.Sprint(r.IDs()) }

// GoString is String, so that %#v prints no key either.
func (r *Ring) GoString() string { return r.String() }

// Seal appends to dst the plaintext sealed under the current key and bound
// to ad, written as "id:" and the standard base64 of the random 12-byte
// nonce and the ciphertext: text without a quote, a backslash or a comma's
// meaning in JSON.
func (r *Ring) Seal(dst, plaintext, ad []byte) []byte {
	k := r.keys[0]
	buf := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	rand.Read(buf) // never fails (crypto/rand)
	buf = k.aead.Seal(buf, buf, plaintext, ad)
	dst = append(dst, k.id...)
	dst = append(dst, ':')
	return base64.StdEncoding.AppendEncode(dst, buf)
}

// Open appends to dst the plaintext Seal sealed into sealed with the same
// ad, or returns ErrUnopenable when no key of the ring opens it. It opens in
// dst's spare capacity: with enough of it, it allocates nothing.
func (r *Ring) Open(dst, sealed, ad []byte) ([]byte, error) {
	i := bytes.IndexByte(sealed, ':')
	if i < 0 {
		return dst, ErrUnopenable
	}
	id := sealed[:i]
	for _, k := range r.keys {
		if k.id != string(id) {
			continue
		}
		start := len(dst)
		buf, err := base64.StdEncoding.AppendDecode(dst, sealed[i+1:])
		n := k.aead.NonceSize()
		if err != nil || len(buf)-start < n+k.aead.Overhead() {
			return dst, ErrUnopenable
		}
		// The nonce moves out and the ciphertext to start, where it is
		// opened in place (the exact overlap cipher.AEAD allows).
		var nonce [12]byte
		copy(nonce[:], buf[start:start+n])
		ct := buf[start : start+copy(buf[start:], buf[start+n:])]
		out, err := k.aead.Open(buf[:start], nonce[:n], ct, ad)
		if err != nil {
			return dst, ErrUnopenable
		}
		return out, nil
	}
	return dst, ErrUnopenable
}
