package delivery_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// storedFingerprint is the content hash push_events keeps for the only
// event of the database opts opens.
func storedFingerprint(t *testing.T, opts store.Options) string {
	t.Helper()
	var fp string
	if err := storetest.SQL(t, opts).QueryRow(`SELECT fingerprint FROM push_events`).Scan(&fp); err != nil {
		t.Fatal(err)
	}
	return fp
}

// digestEnv is a keyedEnv over a database the test can also read and write
// with SQL.
func digestEnv(t *testing.T, d storetest.Dialect, keys *seal.Ring) (*keyedEnv, store.Options) {
	t.Helper()
	opts := d.Options(t)
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := &keyedEnv{env: mustEnvOn(t, s, clock.NewManual(start))}
	e.rekey(t, keys)
	return e, opts
}

// TestStoredDigestIsKeyed: the content hash an event keeps is HMAC-SHA256
// under the digest key, which the database never holds: neither the plain
// SHA-256 of the notification nor its HMAC under any other key reproduces
// it (both databases).
func TestStoredDigestIsKeyed(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e, opts := digestEnv(t, d, sealtest.Ring(t))
			p := e.device(t, "hostA", "phone")
			n := alert("n", 1)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			got := storedFingerprint(t, opts)
			content := n.AppendJSON(nil, false)
			plain := sha256.Sum256(content)
			raw, _ := base64.StdEncoding.DecodeString(sealtest.DigestKeyText)
			mac := hmac.New(sha256.New, raw)
			mac.Write(content)
			if got == hex.EncodeToString(plain[:]) || got != hex.EncodeToString(mac.Sum(nil)) {
				t.Fatalf("stored fingerprint %q, want HMAC-SHA256 under the digest key, not the plain SHA-256", got)
			}
			other := make([]byte, seal.KeySize)
			rand.Read(other)
			mac = hmac.New(sha256.New, other)
			mac.Write(content)
			if got == hex.EncodeToString(mac.Sum(nil)) {
				t.Fatal("another key reproduces the stored fingerprint")
			}
		})
	}
}

// TestResendAfterPayloadRotation: a resend of the same content after the
// payload key ring was rotated is the same event (queued, nothing new
// recorded), and other content under its identity is still refused: the
// digest's key is not the ring's (both databases).
func TestResendAfterPayloadRotation(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			k1, k2 := keyEntry(t, "k1"), keyEntry(t, "k2")
			e, _ := digestEnv(t, d, ring(t, k1))
			p := e.device(t, "hostA", "phone")
			n := alert("n", 1)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			before := e.rows(t)
			e.rekey(t, sealingWith(t, k1+","+k2, "k2"))
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			e.mustRows(t, before)
			changed := n
			changed.Body = "another body"
			e.mustSend(t, contract.StatusError, "hostA", changed, p)
			e.rekey(t, ring(t, k2))
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			e.mustRows(t, before)
		})
	}
}

// TestEventStoredBeforeKeyedDigest: an event stored with the plain SHA-256
// content hash, as every event was before the digest was keyed, still
// matches its content within its life: a resend is queued, a phone that
// never had it gets a batch of its own (the statement compares both
// forms), and other content is refused (both databases).
func TestEventStoredBeforeKeyedDigest(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e, opts := digestEnv(t, d, sealtest.Ring(t))
			p := e.device(t, "hostA", "phone")
			n := alert("n", 1)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			e.sched.take()
			plain := sha256.Sum256(n.AppendJSON(nil, false))
			if _, err := storetest.SQL(t, opts).Exec(`UPDATE push_events SET fingerprint = $1`, hex.EncodeToString(plain[:])); err != nil {
				t.Fatal(err)
			}
			before := e.rows(t)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			e.mustRows(t, before)
			p2 := e.device(t, "hostA", "phone2")
			e.mustSend(t, contract.StatusQueued, "hostA", n, p2)
			if calls := e.sched.take(); len(calls) != 1 || e.batch(t, calls[0].BatchID).RegistrationID != p2 {
				t.Fatalf("the second phone's send scheduled %v, want one batch of its own", calls)
			}
			changed := n
			changed.Body = "another body"
			p3 := e.device(t, "hostA", "phone3")
			e.mustSend(t, contract.StatusError, "hostA", changed, p, p3)
			if got := storedFingerprint(t, opts); got != hex.EncodeToString(plain[:]) {
				t.Fatalf("the stored event's hash changed to %q", got)
			}
		})
	}
}
