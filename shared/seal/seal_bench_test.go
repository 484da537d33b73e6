package seal

import (
	"crypto/rand"
	"encoding/base64"
	"testing"
)

// benchPlain is a typical member as a batch seals it: a notification's JSON
// of about 300 bytes.
var benchPlain = []byte(`{"notificationId":"agent-task-41","notificationSeq":41,"notificationEpoch":"3f1c2a9e-5b7d-4c1e-9a4f-` +
	`1e2d3c4b5a69","source":"agent-task-complete","kind":"alert","agentState":"finished","title":"Refactor finished",` +
	`"body":"Claude finished the refactor of shared/store: 14 files changed, all tests pass.","worktreeId":"wt-orca-main"}`)

// BenchmarkSealOpen measures one seal and one open of a typical member with
// XChaCha20-Poly1305 (what seals now) and AES-256-GCM (what sealed before).
func BenchmarkSealOpen(b *testing.B) {
	entry, err := NewEntry(rand.Reader, "k1")
	if err != nil {
		b.Fatal(err)
	}
	r, err := ParseRing(entry)
	if err != nil {
		b.Fatal(err)
	}
	ad := []byte("orca-push/payload/1 batch reg")
	k := r.keys[0]
	gcmSealed := func() []byte { // a GCM seal as Seal wrote it before XChaCha20-Poly1305
		nonce := make([]byte, k.gcm.NonceSize(), 64+len(benchPlain))
		rand.Read(nonce)
		return []byte("k1:" + base64.StdEncoding.EncodeToString(k.gcm.Seal(nonce, nonce, benchPlain, ad)))
	}()
	xSealed := r.Seal(nil, benchPlain, ad)
	dst := make([]byte, 0, 1024)
	b.Run("seal/xchacha20poly1305", func(b *testing.B) {
		for b.Loop() {
			r.Seal(dst[:0], benchPlain, ad)
		}
	})
	b.Run("seal/aes256gcm", func(b *testing.B) {
		for b.Loop() { // Seal as it was before XChaCha20-Poly1305
			buf := make([]byte, k.gcm.NonceSize(), k.gcm.NonceSize()+len(benchPlain)+k.gcm.Overhead())
			rand.Read(buf)
			buf = k.gcm.Seal(buf, buf, benchPlain, ad)
			out := append(append(dst[:0], k.id...), ':')
			base64.StdEncoding.AppendEncode(out, buf)
		}
	})
	for name, sealed := range map[string][]byte{"xchacha20poly1305": xSealed, "aes256gcm": gcmSealed} {
		b.Run("open/"+name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Open(dst[:0], sealed, ad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
