package routes_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store/storetest"
)

// challenge asks for a challenge for kp and answers it at the gateway's now.
func (g *gateway) challenge(t *testing.T, kp hostclient.Keypair) (contract.ChallengeResponse, string) {
	t.Helper()
	status, body := g.do(t, "POST", "/v1/host/challenge", `{"v":1,"hostPublicKeyB64":"`+kp.PublicKeyB64()+`"}`, g.freshIP())
	if status != http.StatusOK {
		t.Fatalf("challenge = %d %s", status, body)
	}
	c := decodeChallenge(t, body)
	proof, err := hostclient.Answer(kp, g.srv.URL, c, g.clock.Now())
	if err != nil {
		t.Fatalf("Answer: %v", err)
	}
	return c, proof
}

func (g *gateway) session(t *testing.T, challengeID, proof string) (int, string) {
	t.Helper()
	return g.do(t, "POST", "/v1/host/session", `{"v":1,"challengeId":"`+challengeID+`","proofB64":"`+proof+`"}`, g.freshIP())
}

func mustKeypair(t testing.TB) hostclient.Keypair {
	t.Helper()
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func TestHandshake(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			kp := mustKeypair(t)
			before := g.rowCounts(t)
			c, proof := g.challenge(t, kp)
			if c.ExpiresAt != start.UnixMilli()+contract.ChallengeTTL.Milliseconds() {
				t.Errorf("expiresAt = %d, want issue + 10 s", c.ExpiresAt)
			}
			after := g.rowCounts(t)
			if after["push_hosts"] != before["push_hosts"] || after["push_challenges"] != before["push_challenges"]+1 {
				t.Fatalf("a challenge must write one challenge row and no host row: %v → %v", before, after)
			}
			status, body := g.session(t, c.ChallengeID, proof)
			if status != http.StatusOK {
				t.Fatalf("session = %d %s", status, body)
			}
			var s contract.SessionResponse
			json.Unmarshal([]byte(body), &s)
			if s.HostFingerprint != kp.Fingerprint() || len(s.SessionToken) != 43 ||
				s.ExpiresAt != start.UnixMilli()+contract.SessionTTL.Milliseconds() {
				t.Fatalf("session = %+v", s)
			}
			if n := g.rowCounts(t)["push_hosts"]; n != 1 {
				t.Fatalf("push_hosts = %d after a verified proof, want 1", n)
			}
			if status, body := g.do(t, "GET", "/v1/devices", "", bearerHeader(s.SessionToken)); status != 200 || body != `{"devices":[]}` {
				t.Fatalf("GET /v1/devices = %d %s", status, body)
			}
		})
	}
}

func TestSessionRefusals(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			kp := mustKeypair(t)

			// Unknown challenge.
			_, proof := g.challenge(t, kp)
			if status, body := g.session(t, "no-such-challenge", proof); status != 401 || body != `{"error":"invalid_challenge"}` {
				t.Errorf("unknown challenge = %d %s", status, body)
			}
			// Wrong proof, then a non-canonical one: the challenge stays usable.
			c, proof := g.challenge(t, kp)
			wrong := "A" + proof[1:]
			if wrong == proof {
				wrong = "B" + proof[1:]
			}
			if status, body := g.session(t, c.ChallengeID, wrong); status != 401 || body != `{"error":"invalid_proof"}` {
				t.Errorf("wrong proof = %d %s", status, body)
			}
			// The 43rd character carries two padding bits: flipping the low
			// one keeps the alphabet but breaks the canonical decode.
			const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
			nonCanonical := proof[:42] + string(alphabet[strings.IndexByte(alphabet, proof[42])^1]) + "="
			if status, body := g.session(t, c.ChallengeID, nonCanonical); status != 401 || body != `{"error":"invalid_proof"}` {
				t.Errorf("non-canonical proof = %d %s", status, body)
			}
			// At exactly expiresAt the proof is accepted; then replay is refused.
			g.clock.Set(time.UnixMilli(c.ExpiresAt))
			if status, body := g.session(t, c.ChallengeID, proof); status != 200 {
				t.Fatalf("proof at expiresAt = %d %s", status, body)
			}
			if status, body := g.session(t, c.ChallengeID, proof); status != 401 || body != `{"error":"invalid_proof"}` {
				t.Errorf("replay = %d %s", status, body)
			}
			// One millisecond late is refused, and so is 39.999 s late.
			for _, late := range []time.Duration{time.Millisecond, 39999 * time.Millisecond} {
				c, proof := g.challenge(t, kp)
				g.clock.Set(time.UnixMilli(c.ExpiresAt).Add(late))
				if status, body := g.session(t, c.ChallengeID, proof); status != 401 || body != `{"error":"invalid_proof"}` {
					t.Errorf("proof %v late = %d %s", late, status, body)
				}
			}
		})
	}
}

func TestBearerRefusals(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			h := g.mustHost(t)
			if err := h.SignIn(context.Background()); err != nil {
				t.Fatal(err)
			}
			token, expires := h.Session()
			tests := []struct {
				name   string
				header http.Header
				want   string
			}{
				{"missing", nil, "invalid_token"},
				{"no scheme", http.Header{"Authorization": {token}}, "invalid_token"},
				{"basic", http.Header{"Authorization": {"Basic " + token}}, "invalid_token"},
				{"empty token", http.Header{"Authorization": {"Bearer   "}}, "invalid_token"},
				{"unknown", bearerHeader(otherToken(token)), "invalid_token"},
			}
			for _, tt := range tests {
				if status, body := g.do(t, "GET", "/v1/devices", "", tt.header); status != 401 || body != `{"error":"`+tt.want+`"}` {
					t.Errorf("%s: %d %s, want 401 %s", tt.name, status, body, tt.want)
				}
			}
			// The scheme is case-insensitive.
			if status, _ := g.do(t, "GET", "/v1/devices", "", http.Header{"Authorization": {"bEaReR " + token}}); status != 200 {
				t.Errorf("bEaReR = %d, want 200", status)
			}
			// Valid on the final millisecond, expired one later.
			g.clock.Set(time.UnixMilli(expires))
			if status, _ := g.do(t, "GET", "/v1/devices", "", bearerHeader(token)); status != 200 {
				t.Errorf("at expiresAt = %d, want 200", status)
			}
			g.clock.Set(time.UnixMilli(expires + 1))
			if status, body := g.do(t, "GET", "/v1/devices", "", bearerHeader(token)); status != 401 || body != `{"error":"session_expired"}` {
				t.Errorf("after expiry = %d %s", status, body)
			}
			// Signing in again replaces the old token: invalid_token, not expired.
			if err := h.SignIn(context.Background()); err != nil {
				t.Fatal(err)
			}
			newToken, _ := h.Session()
			g.clock.Set(time.UnixMilli(expires - 1000))
			if status, body := g.do(t, "GET", "/v1/devices", "", bearerHeader(token)); status != 401 || body != `{"error":"invalid_token"}` {
				t.Errorf("replaced token = %d %s", status, body)
			}
			if status, _ := g.do(t, "GET", "/v1/devices", "", bearerHeader(newToken)); status != 200 {
				t.Errorf("new token = %d, want 200", status)
			}
		})
	}
}

func TestConcurrentProofsMintOneSession(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			c, proof := g.challenge(t, mustKeypair(t))
			statuses := make([]int, 20)
			var wg sync.WaitGroup
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i], _ = g.session(t, c.ChallengeID, proof)
				}()
			}
			wg.Wait()
			ok := 0
			for _, s := range statuses {
				switch s {
				case 200:
					ok++
				case 401:
				default:
					t.Fatalf("status %d", s)
				}
			}
			if ok != 1 || g.rowCounts(t)["push_sessions"] != 1 {
				t.Fatalf("%d sessions minted from one challenge, want 1", ok)
			}
		})
	}
}

func TestConcurrentSignInsLeaveOneToken(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			kp := mustKeypair(t)
			type answered struct{ id, proof string }
			var answers []answered
			for range 20 {
				c, p := g.challenge(t, kp)
				answers = append(answers, answered{c.ChallengeID, p})
			}
			tokens := make([]string, len(answers))
			var wg sync.WaitGroup
			for i, a := range answers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					status, body := g.session(t, a.id, a.proof)
					if status != 200 {
						t.Errorf("session = %d %s", status, body)
						return
					}
					var s contract.SessionResponse
					json.Unmarshal([]byte(body), &s)
					tokens[i] = s.SessionToken
				}()
			}
			wg.Wait()
			valid := 0
			for _, tok := range tokens {
				if status, _ := g.do(t, "GET", "/v1/devices", "", bearerHeader(tok)); status == 200 {
					valid++
				}
			}
			if valid != 1 {
				t.Fatalf("%d valid tokens after 20 concurrent sign-ins, want 1", valid)
			}
		})
	}
}

func TestClientReauthenticates(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			h := g.mustHost(t)
			ctx := context.Background()
			if _, err := h.Devices(ctx); err != nil {
				t.Fatal(err)
			}
			g.clock.Advance(contract.SessionTTL + time.Millisecond)
			if _, err := h.Devices(ctx); err != nil {
				t.Fatalf("after expiry the client must sign in again: %v", err)
			}
			var apiErr *hostclient.APIError
			if err := h.Delete(ctx, "nope"); !errors.As(err, &apiErr) || !errors.Is(err, contract.ErrNotFound) {
				t.Fatalf("Delete(unknown) = %v, want not_found", err)
			}
		})
	}
}

func decodeChallenge(t testing.TB, body string) contract.ChallengeResponse {
	t.Helper()
	var c contract.ChallengeResponse
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWeakHostKeyRefused: a challenge for the all-zero key (or another
// low-order point, whose shared secret everyone knows) is 400
// invalid_request, writes no row and counts as rejected.
func TestWeakHostKeyRefused(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			one := make([]byte, 32)
			one[0] = 1
			for _, key := range [][]byte{make([]byte, 32), append(make([]byte, 31), 0x80), one} {
				before := g.rowCounts(t)
				g.svc.Counters.Consume()
				body := `{"v":1,"hostPublicKeyB64":"` + base64.StdEncoding.EncodeToString(key) + `"}`
				status, got := g.do(t, "POST", "/v1/host/challenge", body, g.freshIP())
				if status != http.StatusBadRequest || got != `{"error":"invalid_request"}` {
					t.Errorf("challenge for %x = %d %s, want 400 invalid_request", key, status, got)
				}
				g.mustUnchanged(t, before)
				if n := g.svc.Counters.Consume()[obs.ChallengeRejected]; n != 1 {
					t.Errorf("challenge_rejected = %d, want 1", n)
				}
			}
		})
	}
}

// otherToken is a well-formed session token that differs from token in its
// first character (a fixed replacement would equal token whenever token
// started with it).
func otherToken(token string) string {
	first := "x"
	if token[0] == 'x' {
		first = "y"
	}
	return first + token[1:]
}
