package delivery

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/seal/sealtest"
)

// The expected hashes were computed outside Go, with sha256sum over the JSON
// text JSON.stringify writes.
func TestEventID(t *testing.T) {
	tests := []struct {
		name string
		n    contract.Notification
		want string
	}{
		// sha256(`["AbCdEfGhIjKlMnOp","alert","epoch-1",7]`)
		{"omitted kind is alert", contract.Notification{NotificationID: "ignored", Epoch: "epoch-1", Seq: 7},
			"036779f63c075cf4bfbd80cf6cd3a0442d71253fd3b801265305ad9fa1410801"},
		{"explicit alert", contract.Notification{Kind: contract.KindAlert, Epoch: "epoch-1", Seq: 7},
			"036779f63c075cf4bfbd80cf6cd3a0442d71253fd3b801265305ad9fa1410801"},
		// sha256(`["AbCdEfGhIjKlMnOp","dismiss","e\"1",9007199254740991]`)
		{"dismissal, escaped epoch, max seq", contract.Notification{Kind: contract.KindDismiss, Epoch: `e"1`,
			Seq: contract.MaxSafeInteger}, "63f4c11c860066d142a52961bd6f59853ac71e16d05ad2e10dbb3bce8a367932"},
	}
	for _, tt := range tests {
		if got := eventID("AbCdEfGhIjKlMnOp", &tt.n); got != tt.want {
			t.Errorf("%s: eventID = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestContentFingerprint pins the content events hash, and its plain
// SHA-256, which events stored before the digest was keyed kept: a resend of
// one of them must still find it (former).
func TestContentFingerprint(t *testing.T) {
	on, off := true, false
	base := contract.Notification{NotificationID: "n1", Seq: 7, Epoch: "epoch-1", Source: contract.SourcePlugin, Title: "T"}
	// sha256(`{"notificationId":"n1","notificationSeq":7,"notificationEpoch":"epoch-1","source":"plugin",
	// "kind":"alert","agentState":null,"title":"T","body":""}`)
	const want = "84cb506936cb705fc7dda02ccc009aa9420755cdcaa8ac1efff4dc8babaeeea3"
	for _, mod := range []func(n *contract.Notification){
		func(n *contract.Notification) {},
		func(n *contract.Notification) { n.Kind = contract.KindAlert },
		func(n *contract.Notification) { n.Sound = &on },
		func(n *contract.Notification) { n.Sound = &off },
	} {
		n := base
		mod(&n)
		if got := sha256Hex(contentOf(&n)); got != want {
			t.Errorf("sha256Hex(contentOf(%s)) = %q, want %q", n.AppendJSON(nil, true), got, want)
		}
	}
	n := base
	n.Body = "x"
	if sha256Hex(contentOf(&n)) == want {
		t.Error("a changed body kept the fingerprint")
	}
	// Gen D's fields are content, after Gen B's keys:
	// sha256(`{"notificationId":"n1","notificationSeq":7,"notificationEpoch":"epoch-1","source":"plugin",
	// "kind":"alert","agentState":null,"title":"T","body":"","paneKey":"e2e1:AAAA","executionHost":"runtime:h"}`)
	n = base
	n.PaneKey, n.ExecutionHost = "e2e1:AAAA", "runtime:h"
	if got := sha256Hex(contentOf(&n)); got != "08c2e213e0ec851e13f8576423a00379fd950192f318b30f83565f6b845bc8b6" {
		t.Errorf("sha256Hex(contentOf(%s)) = %q", n.AppendJSON(nil, true), got)
	}
}

// TestContentDigest: an event's fingerprint is HMAC-SHA256 of its content
// under the digest key, not the plain SHA-256 (which stays as former, for
// events stored before), and another key gives another digest: without the
// key, the stored digest cannot be reproduced from the notification.
func TestContentDigest(t *testing.T) {
	n := contract.Notification{NotificationID: "n1", Seq: 7, Epoch: "epoch-1", Source: contract.SourcePlugin,
		Title: "Agent finished"}
	ev := newEvent("hostA", &n, 0, sealtest.DigestKey(t))
	raw, _ := base64.StdEncoding.DecodeString(sealtest.DigestKeyText)
	mac := hmac.New(sha256.New, raw)
	mac.Write(contentOf(&n))
	if want := hex.EncodeToString(mac.Sum(nil)); ev.fingerprint != want {
		t.Fatalf("fingerprint = %q, want HMAC-SHA256 under the digest key %q", ev.fingerprint, want)
	}
	if ev.former != sha256Hex(contentOf(&n)) || ev.fingerprint == ev.former {
		t.Fatalf("former = %q, fingerprint %q: want the plain SHA-256 as former only", ev.former, ev.fingerprint)
	}
	text, err := seal.NewDigestKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := seal.ParseDigestKey(text)
	if err != nil {
		t.Fatal(err)
	}
	if newEvent("hostA", &n, 0, other).fingerprint == ev.fingerprint {
		t.Fatal("another digest key gives the same fingerprint")
	}
	if !ev.sameContent(ev.fingerprint) || !ev.sameContent(ev.former) || ev.sameContent(sha256Hex([]byte("other"))) {
		t.Fatal("sameContent must accept the digest and the former hash, and nothing else")
	}
}

func TestNewDeadline(t *testing.T) {
	const now = 1_000_000
	life := contract.EventLifetime.Milliseconds()
	tests := []struct {
		expiresAt, want int64
	}{
		{0, now + life},
		{now + 1, now + 1},
		{now + life, now + life},
		{now + life + 1, now + life},
		{now - 5, now - 5},
	}
	for _, tt := range tests {
		if got := newDeadline(&contract.Notification{ExpiresAt: tt.expiresAt}, now); got != tt.want {
			t.Errorf("newDeadline(expiresAt %d) = %d, want %d", tt.expiresAt, got, tt.want)
		}
	}
}

// BenchmarkDecodeAndPrepare measures the work of one /v1/send before the
// database that Gen D's fields add to: the strict decode (with the
// 3000-byte rule) and the event's identity, content fingerprint and stored
// form (newEvent), for BenchmarkSendAdmission's typical alert without and
// with a 400-character sealed paneKey.
func BenchmarkDecodeAndPrepare(b *testing.B) {
	digest := sealtest.DigestKey(b)
	const body = `{"v":1,"registrationIds":["7c0a3e55-8a55-4f8e-9a54-1f0b8d6c2e11"],"notification":{` +
		`"notificationId":"agent-task-41","notificationSeq":41,"notificationEpoch":"3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69",` +
		`"source":"agent-task-complete","agentState":"finished","title":"Refactor finished","body":"Claude finished ` +
		`the refactor of shared/store: 14 files changed, all tests pass.","worktreeId":"wt-orca-main"`
	for _, pane := range []int{0, 400} {
		req := body
		if pane > 0 {
			req += `,"paneKey":"` + contract.SealedPaneKeyPrefix + strings.Repeat("Qk9YK3N", 57)[:pane-len(contract.SealedPaneKeyPrefix)] + `"`
		}
		req += "}}"
		b.Run(fmt.Sprintf("pane=%d", pane), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := contract.DecodeSendRequest([]byte(req))
				if err != nil {
					b.Fatal(err)
				}
				newEvent("AbCdEfGhIjKlMnOp", &r.Notification, 1_800_000_000_000, digest)
			}
		})
	}
}
