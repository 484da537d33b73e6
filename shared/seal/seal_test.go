package seal_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/seal"
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
	if !bytes.HasPrefix(sealed, []byte("k1:")) || bytes.Contains(sealed, []byte("Build")) {
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
// unknown key id or another key under the same id open nothing.
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
		"other row":        {r, sealed, "row-2"},
		"changed byte":     {r, changed, "row-1"},
		"unknown id":       {r, append([]byte("k9"), sealed[2:]...), "row-1"},
		"same id, new key": {other, sealed, "row-1"},
		"no id":            {r, sealed[3:], "row-1"},
		"short":            {r, []byte("k1:AAAA"), "row-1"},
		"not base64":       {r, []byte("k1:!!!!"), "row-1"},
	}
	for name, c := range cases {
		if got, err := c.r.Open(nil, c.sealed, []byte(c.ad)); !errors.Is(err, seal.ErrUnopenable) || got != nil {
			t.Errorf("%s: Open = %q, %v, want ErrUnopenable", name, got, err)
		}
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
