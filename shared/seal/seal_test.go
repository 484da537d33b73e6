package seal_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/seal/sealtest"
)

func mustEntry(t *testing.T, id string) string {
	t.Helper()
	e, err := seal.NewEntry(rand.Reader, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustRing(t *testing.T, s string) *seal.Ring {
	t.Helper()
	r, err := seal.ParseRing(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSealOpens: what the current key sealed opens with the same additional
// data, holds neither the plaintext nor the key, and names its key.
func TestSealOpens(t *testing.T) {
	entry := mustEntry(t, "k1")
	r := mustRing(t, entry)
	sealed := r.Seal(nil, []byte("Build finished"), []byte("row-1"))
	if !bytes.HasPrefix(sealed, []byte("k1:x.")) || bytes.Contains(sealed, []byte("Build")) {
		t.Fatalf("sealed = %q", sealed)
	}
	if bytes.ContainsAny(sealed, "\"\\,") {
		t.Fatalf("sealed %q holds a character JSON or the ring format would read", sealed)
	}
	got, err := r.Open(nil, sealed, []byte("row-1"))
	if err != nil || string(got) != "Build finished" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if got, err := r.Open([]byte("text: "), sealed, []byte("row-1")); err != nil || string(got) != "text: Build finished" {
		t.Fatalf("Open after a prefix = %q, %v", got, err)
	}
	if got, err := r.Open(make([]byte, 0, 256), sealed, []byte("row-1")); err != nil || string(got) != "Build finished" {
		t.Fatalf("Open into spare capacity = %q, %v", got, err)
	}
	if again := r.Seal(nil, []byte("Build finished"), []byte("row-1")); bytes.Equal(again, sealed) {
		t.Fatal("two seals of the same text are equal: the nonce is not random")
	}
	_, key, _ := strings.Cut(entry, ":")
	for _, s := range []string{r.String(), fmt.Sprintf("%v %+v %#v", r, r, r)} {
		if strings.Contains(s, key) || !strings.Contains(s, "k1") {
			t.Fatalf("the ring prints as %q", s)
		}
	}
}

// TestOpenRefuses: another row's additional data, a changed byte, an
// unknown key id or another key under the same id open nothing; only the
// unknown id is ErrKeyNotHeld, which another ring may open.
// TestSealedLen: SealedLen is what Seal appends, for every length and for
// the key that seals after WithSealKey.
func TestSealedLen(t *testing.T) {
	r, err := seal.ParseRing("k1:" + strings.Repeat("A", 43) + "=,long-key-id_2:" + strings.Repeat("B", 43) + "=")
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.WithSealKey("long-key-id_2")
	if err != nil {
		t.Fatal(err)
	}
	for _, ring := range []*seal.Ring{r, other} {
		for n := range 200 {
			if got, want := len(ring.Seal([]byte("x"), make([]byte, n), []byte("ad"))), 1+ring.SealedLen(n); got != want {
				t.Fatalf("%v: Seal of %d bytes appended %d, SealedLen says %d", ring, n, got-1, want-1)
			}
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	r := mustRing(t, mustEntry(t, "k1"))
	sealed := r.Seal(nil, []byte("text"), []byte("row-1"))
	changed := bytes.Clone(sealed)
	changed[len(changed)-3] ^= 1
	other := mustRing(t, mustEntry(t, "k1"))
	cases := map[string]struct {
		r      *seal.Ring
		sealed []byte
		ad     string
	}{
		"other row":           {r, sealed, "row-2"},
		"changed byte":        {r, changed, "row-1"},
		"unknown id":          {r, append([]byte("k9"), sealed[2:]...), "row-1"},
		"same id, new key":    {other, sealed, "row-1"},
		"no id":               {r, sealed[3:], "row-1"},
		"short":               {r, []byte("k1:AAAA"), "row-1"},
		"short, XChaCha":      {r, []byte("k1:x.AAAA"), "row-1"},
		"not base64":          {r, []byte("k1:!!!!"), "row-1"},
		"XChaCha read as GCM": {r, append([]byte("k1:"), sealed[5:]...), "row-1"},
	}
	for name, c := range cases {
		got, err := c.r.Open(nil, c.sealed, []byte(c.ad))
		if !errors.Is(err, seal.ErrUnopenable) || got != nil {
			t.Errorf("%s: Open = %q, %v, want ErrUnopenable", name, got, err)
		}
		if notHeld := name == "unknown id"; errors.Is(err, seal.ErrKeyNotHeld) != notHeld {
			t.Errorf("%s: Open = %v, ErrKeyNotHeld %v, want %v", name, err, !notHeld, notHeld)
		}
	}
}

// gcmSealed is what the ring of sealtest.Keys sealed with AES-256-GCM, as
// every seal was before XChaCha20-Poly1305: plaintext gcmPlain, additional
// data gcmAD.
const (
	gcmSealed = "test1:5zD3ekeeDTVJ8v1TkJJNxshDrY3fnd3qsn+n0/3RGcX3qKnEYVHzuIkSakuvf90aa42A5MQ="
	gcmPlain  = `{"title":"sealed before"}`
	gcmAD     = "batch-1/reg-1"
)

// TestOpensGCMSealedBefore: a row sealed with AES-256-GCM before the change
// still opens, and still refuses other additional data.
func TestOpensGCMSealedBefore(t *testing.T) {
	r := sealtest.Ring(t)
	got, err := r.Open(nil, []byte(gcmSealed), []byte(gcmAD))
	if err != nil || string(got) != gcmPlain {
		t.Fatalf("Open(GCM seal) = %q, %v, want %q", got, err, gcmPlain)
	}
	if _, err := r.Open(nil, []byte(gcmSealed), []byte("batch-2/reg-1")); !errors.Is(err, seal.ErrUnopenable) {
		t.Fatalf("Open(GCM seal, other row) = %v, want ErrUnopenable", err)
	}
	asX := "test1:x." + strings.TrimPrefix(gcmSealed, "test1:")
	if _, err := r.Open(nil, []byte(asX), []byte(gcmAD)); !errors.Is(err, seal.ErrUnopenable) {
		t.Fatalf("Open(GCM seal marked XChaCha) = %v, want ErrUnopenable", err)
	}
}

// TestSealsXChaCha: a new seal carries a 24-byte nonce (XChaCha20-Poly1305's;
// AES-GCM's is 12) before the ciphertext and its 16-byte tag.
func TestSealsXChaCha(t *testing.T) {
	r := mustRing(t, mustEntry(t, "k1"))
	plain := []byte("Build finished")
	sealed := r.Seal(nil, plain, []byte("row-1"))
	raw, err := base64.StdEncoding.DecodeString(string(sealed[len("k1:x."):]))
	if err != nil || len(raw) != 24+len(plain)+16 {
		t.Fatalf("sealed %q decodes to %d bytes (%v), want 24 + %d + 16", sealed, len(raw), err, len(plain))
	}
}

// TestWithSealKey: a ring told which key seals seals with it whatever its
// order, still opens with every key, and leaves the ring it came from as it
// was; a key id the ring lacks is refused.
func TestWithSealKey(t *testing.T) {
	oldEntry, newEntry := mustEntry(t, "old"), mustEntry(t, "new")
	r := mustRing(t, oldEntry+","+newEntry)
	sealedOld := r.Seal(nil, []byte("a"), nil)
	s, err := r.WithSealKey("new")
	if err != nil {
		t.Fatal(err)
	}
	if ids := s.IDs(); len(ids) != 2 || ids[0] != "new" || ids[1] != "old" {
		t.Fatalf("IDs = %v, want [new old]", ids)
	}
	sealedNew := s.Seal(nil, []byte("b"), nil)
	if !bytes.HasPrefix(sealedNew, []byte("new:")) || !bytes.HasPrefix(r.Seal(nil, nil, nil), []byte("old:")) {
		t.Fatalf("sealed %q after WithSealKey(new), want new's; the first ring must still seal with old", sealedNew)
	}
	for _, c := range [][]byte{sealedOld, sealedNew} {
		if _, err := s.Open(nil, c, nil); err != nil {
			t.Errorf("Open(%q) = %v", c[:4], err)
		}
	}
	if _, err := r.WithSealKey("k9"); err == nil {
		t.Error("WithSealKey(k9) accepted a key the ring lacks")
	}
}

// TestRotation: after a new key is put first, what the old one sealed still
// opens, and what is sealed now is under the new one; once the old key is
// removed its ciphertexts open no more.
func TestRotation(t *testing.T) {
	oldEntry, newEntry := mustEntry(t, "old"), mustEntry(t, "new")
	before := mustRing(t, oldEntry)
	sealedOld := before.Seal(nil, []byte("pending"), []byte("row"))
	after := mustRing(t, newEntry+","+oldEntry)
	if got, err := after.Open(nil, sealedOld, []byte("row")); err != nil || string(got) != "pending" {
		t.Fatalf("the rotated ring opens %q, %v", got, err)
	}
	sealedNew := after.Seal(nil, []byte("later"), []byte("row"))
	if !bytes.HasPrefix(sealedNew, []byte("new:")) {
		t.Fatalf("sealed after rotation under %q, want new", sealedNew[:4])
	}
	if _, err := before.Open(nil, sealedNew, []byte("row")); !errors.Is(err, seal.ErrUnopenable) {
		t.Fatalf("the old ring opened the new key's text: %v", err)
	}
	if _, err := mustRing(t, newEntry).Open(nil, sealedOld, []byte("row")); !errors.Is(err, seal.ErrUnopenable) {
		t.Fatalf("the old key's text opened once the old key was removed: %v", err)
	}
}

// TestParseRingRefuses: every malformed ring is refused, and the error
// holds no key.
func TestParseRingRefuses(t *testing.T) {
	good := mustEntry(t, "k1")
	_, key, _ := strings.Cut(good, ":")
	short := "k2:" + key[:20]
	for _, s := range []string{
		"", " ", key, ":" + key, "k 1:" + key, strings.Repeat("a", 33) + ":" + key,
		short, "k2:" + key + "x", good + "," + good, good + ",", "k2:" + strings.Repeat("A", 64),
	} {
		_, err := seal.ParseRing(s)
		if err == nil {
			t.Errorf("ParseRing(%q) accepted", s)
			continue
		}
		if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[:20]) {
			t.Errorf("ParseRing(%q) error %q holds the key", s, err)
		}
	}
	r := mustRing(t, " "+good+" , "+mustEntry(t, "k-2_b"))
	if ids := r.IDs(); len(ids) != 2 || ids[0] != "k1" || ids[1] != "k-2_b" {
		t.Fatalf("IDs = %v", ids)
	}
}
