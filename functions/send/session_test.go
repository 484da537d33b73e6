package send_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestSendRefusesAChangedSession: the edge remembers a bearer's host after
// its first send and does not look it up again, but admission reads the
// session in its first statement, so a session replaced by a new sign-in,
// or expired, since then is refused exactly as the lookup refuses it: 401
// invalid_token or session_expired, nothing written. The refused bearer is
// forgotten, and its refusal spends the invalid-bearer budget.
func TestSendRefusesAChangedSession(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, storetest.Open(t, d))
			h := g.mustHost(t)
			reg := h.mustDevice(t, "phone")
			seq := int64(0)
			send := func(token string) (int, string) {
				t.Helper()
				seq++
				status, body := g.raw(t, token, sendBody(alert("n", seq), reg))
				return status, body
			}
			old, _ := h.Session()
			if status, body := send(old); status != http.StatusOK {
				t.Fatalf("first send = %d %s", status, body)
			}
			// A new sign-in replaces the session; the old bearer is
			// remembered, but admission finds its session gone.
			if err := h.SignIn(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := g.rowCounts(t)
			if status, body := send(old); status != http.StatusUnauthorized || body != `{"error":"invalid_token"}` {
				t.Fatalf("send with the replaced bearer = %d %s, want 401 invalid_token", status, body)
			}
			g.mustUnchanged(t, before)
			// And again: forgotten, it is looked up, and refused the same.
			if status, body := send(old); status != http.StatusUnauthorized || body != `{"error":"invalid_token"}` {
				t.Fatalf("send with the replaced bearer again = %d %s, want 401 invalid_token", status, body)
			}
			// The new bearer works, is remembered, and expires on time.
			current, expires := h.Session()
			if status, body := send(current); status != http.StatusOK {
				t.Fatalf("send with the new bearer = %d %s", status, body)
			}
			g.clock.Set(time.UnixMilli(expires + 1))
			before = g.rowCounts(t)
			if status, body := send(current); status != http.StatusUnauthorized || body != `{"error":"session_expired"}` {
				t.Fatalf("send after expiry = %d %s, want 401 session_expired", status, body)
			}
			g.mustUnchanged(t, before)
		})
	}
}

// TestRememberedRefusalSpendsBudget: refusals found by admission for a
// remembered bearer spend the client IP's invalid-bearer budget, as failed
// lookups do: past contract.InvalidBearerPerMinute of them, the IP is 429.
func TestRememberedRefusalSpendsBudget(t *testing.T) {
	g := mustGateway(t, storetest.Open(t, storetest.Dialects(t)[0]))
	h := g.mustHost(t)
	reg := h.mustDevice(t, "phone")
	token, _ := h.Session()
	restore := func(hash string) {
		t.Helper()
		now := g.clock.Now().UnixMilli()
		if err := g.svc.Store.HostTx(context.Background(), h.fingerprint, func(tx *store.Tx) error {
			return tx.ReplaceSession(context.Background(), h.fingerprint, hash, now+60_000, now)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range contract.InvalidBearerPerMinute {
		// Remembered by a good send, then refused once its session is
		// gone: each refusal is one failed bearer.
		restore(hostauth.HashToken(token))
		if status, body := g.raw(t, token, sendBody(alert("n", int64(2*i+1)), reg)); status != http.StatusOK {
			t.Fatalf("send %d = %d %s", i, status, body)
		}
		restore("another")
		if status, body := g.raw(t, token, sendBody(alert("n", int64(2*i+2)), reg)); status != http.StatusUnauthorized {
			t.Fatalf("refusal %d = %d %s, want 401", i+1, status, body)
		}
	}
	restore(hostauth.HashToken(token))
	if status, body := g.raw(t, token, sendBody(alert("n", 1000), reg)); status != http.StatusTooManyRequests {
		t.Fatalf("after %d refusals = %d %s, want 429", contract.InvalidBearerPerMinute, status, body)
	}
}

// raw posts body to /v1/send with the bearer token and returns the status
// and body.
func (g *gateway) raw(t testing.TB, token string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.srv.URL+"/v1/send", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := g.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}
