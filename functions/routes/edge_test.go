package routes_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store/storetest"
)

func TestBodyCap(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			token := mustSignIn(t, g.mustHost(t))
			valid := `{"v":1,"deviceId":"d1","platform":"android","token":"` + strings.Repeat("a", 40) + `"}`
			// Pad a valid body with white space to exactly the cap: accepted.
			exact := valid + strings.Repeat(" ", contract.MaxBodyBytes-len(valid))
			tooBig := exact + " "
			for _, chunked := range []bool{false, true} {
				send := func(body string) (int, string) {
					var r io.Reader = strings.NewReader(body)
					if chunked {
						r = io.MultiReader(r) // hides the length: sent chunked
					}
					req, _ := http.NewRequest("POST", g.srv.URL+"/v1/devices", r)
					req.Header.Set("Authorization", "Bearer "+token)
					resp, err := g.srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					// An unknown length (0 with a body) goes out chunked; a known
					// one as Content-Length.
					if chunked != (req.ContentLength == 0) {
						t.Fatalf("chunked=%v but ContentLength=%d", chunked, req.ContentLength)
					}
					b, _ := io.ReadAll(resp.Body)
					return resp.StatusCode, strings.TrimSpace(string(b))
				}
				if status, body := send(exact); status != 200 {
					t.Errorf("chunked=%v: %d bytes = %d %s, want 200", chunked, len(exact), status, body)
				}
				before := g.rowCounts(t)
				if status, body := send(tooBig); status != 413 || body != `{"error":"request_too_large"}` {
					t.Errorf("chunked=%v: %d bytes = %d %s, want 413", chunked, len(tooBig), status, body)
				}
				g.mustUnchanged(t, before)
			}
			// Authentication runs first: an oversized anonymous request is 401.
			if status, _ := g.do(t, "POST", "/v1/devices", oversized(valid), nil); status != 401 {
				t.Errorf("oversized without bearer = %d, want 401", status)
			}
			// On the unauthenticated routes the IP bucket runs first, then the cap.
			if status, body := g.do(t, "POST", "/v1/host/challenge", oversized(valid), g.freshIP()); status != 413 {
				t.Errorf("oversized challenge = %d %s, want 413", status, body)
			}
		})
	}
}

func oversized(s string) string { return s + strings.Repeat(" ", contract.MaxBodyBytes+1-len(s)) }

func TestUnauthenticatedBucket(t *testing.T) {
	g := mustGateway(t, storetest.Dialects(t)[0])
	kp := mustKeypair(t)
	body := `{"v":1,"hostPublicKeyB64":"` + kp.PublicKeyB64() + `"}`
	client := http.Header{"X-Forwarded-For": {"203.0.113.7"}}
	// Challenge and session share one bucket of 30 a minute.
	for i := range contract.UnauthenticatedPerMinute {
		path, b := "/v1/host/challenge", body
		if i%2 == 1 {
			path, b = "/v1/host/session", `{"v":1,"challengeId":"x","proofB64":"`+kp.PublicKeyB64()+`"}`
		}
		if status, resp := g.do(t, "POST", path, b, client); status == 429 {
			t.Fatalf("request %d = 429 %s", i+1, resp)
		}
	}
	if status, resp := g.do(t, "POST", "/v1/host/challenge", body, client); status != 429 || resp != `{"error":"rate_limited"}` {
		t.Fatalf("31st = %d %s, want 429", status, resp)
	}
	// Forging the left of the chain does not buy a new bucket.
	spoofed := http.Header{"X-Forwarded-For": {"10.9.9.9, 203.0.113.7"}}
	if status, _ := g.do(t, "POST", "/v1/host/challenge", body, spoofed); status != 429 {
		t.Fatalf("spoofed left hop = %d, want 429", status)
	}
	// Another client is unaffected.
	if status, _ := g.do(t, "POST", "/v1/host/challenge", body, http.Header{"X-Forwarded-For": {"203.0.113.8"}}); status != 200 {
		t.Fatalf("other IP = %d, want 200", status)
	}
	// Half a minute buys back exactly half the bucket.
	g.clock.Advance(contract.BucketWindow / 2)
	for i := range contract.UnauthenticatedPerMinute / 2 {
		if status, _ := g.do(t, "POST", "/v1/host/challenge", body, client); status != 200 {
			t.Fatalf("after refill, request %d = %d", i+1, status)
		}
	}
	if status, _ := g.do(t, "POST", "/v1/host/challenge", body, client); status != 429 {
		t.Fatalf("after 15 refilled = %d, want 429", status)
	}
	// Health and readiness are never limited.
	if status, _ := g.do(t, "GET", "/health", "", client); status != 200 {
		t.Fatalf("health = %d", status)
	}
}

func TestInvalidBearerBudget(t *testing.T) {
	g := mustGateway(t, storetest.Dialects(t)[0])
	token := mustSignIn(t, g.mustHost(t))
	client := http.Header{"X-Forwarded-For": {"203.0.113.9"}}
	bad := http.Header{"X-Forwarded-For": client["X-Forwarded-For"], "Authorization": {"Bearer nope"}}
	good := http.Header{"X-Forwarded-For": client["X-Forwarded-For"], "Authorization": {"Bearer " + token}}
	for i := range contract.InvalidBearerPerMinute {
		if status, _ := g.do(t, "GET", "/v1/devices", "", bad); status != 401 {
			t.Fatalf("invalid bearer %d = %d, want 401", i+1, status)
		}
	}
	// Once the IP has spent its budget, even a valid token is refused.
	if status, body := g.do(t, "GET", "/v1/devices", "", good); status != 429 || body != `{"error":"rate_limited"}` {
		t.Fatalf("valid token from a spent IP = %d %s, want 429", status, body)
	}
	if status, _ := g.do(t, "GET", "/v1/devices", "", bearerHeader(token)); status != 200 {
		t.Fatalf("valid token from another IP = %d, want 200", status)
	}
	g.clock.Advance(contract.BucketWindow)
	if status, _ := g.do(t, "GET", "/v1/devices", "", good); status != 200 {
		t.Fatalf("after a minute = %d, want 200", status)
	}
}

func TestHostBucket(t *testing.T) {
	g := mustGateway(t, storetest.Dialects(t)[0])
	a := mustSignIn(t, g.mustHost(t))
	b := mustSignIn(t, g.mustHost(t))
	for i := range contract.HostPerMinute {
		if status, _ := g.do(t, "GET", "/v1/devices", "", bearerHeader(a)); status != 200 {
			t.Fatalf("request %d = %d", i+1, status)
		}
	}
	if status, _ := g.do(t, "GET", "/v1/devices", "", bearerHeader(a)); status != 429 {
		t.Fatalf("601st = %d, want 429", status)
	}
	// Another host behind the same IP keeps its own budget.
	if status, _ := g.do(t, "GET", "/v1/devices", "", bearerHeader(b)); status != 200 {
		t.Fatalf("other host = %d, want 200", status)
	}
}

// TestAdmissionOverflow holds every session lookup on a PostgreSQL table lock,
// so that 4 lookups run, 32 wait and the rest are refused with 503 busy.
func TestAdmissionOverflow(t *testing.T) {
	pg := storetest.Postgres(t)
	opts := pg.Options(t)
	g := mustGatewayOn(t, opts)
	token := mustSignIn(t, g.mustHost(t))

	release := storetest.LockTable(t, opts, "push_sessions")
	const total = contract.AuthLookupsRunning + contract.AuthLookupsWaiting + 5
	type answer struct {
		status     int
		body       string
		retryAfter string
	}
	answers := make(chan answer, total)
	var wg sync.WaitGroup
	for i := range total {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", g.srv.URL+"/v1/devices", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i))
			resp, err := g.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, string(bytes.TrimSpace(b)), resp.Header.Get("Retry-After")}
		}()
	}
	// The refused ones answer while the others are held.
	for range total - contract.AuthLookupsRunning - contract.AuthLookupsWaiting {
		select {
		case a := <-answers:
			if a.status != 503 || a.body != `{"error":"busy"}` || a.retryAfter != "1" {
				t.Errorf("overflow answer = %+v, want 503 busy with Retry-After 1", a)
			}
		case <-time.After(10 * time.Second): // a process boundary: the lock holder is another connection
			t.Fatal("no busy answer while lookups are held")
		}
	}
	release()
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.status != 200 {
			t.Errorf("admitted lookup = %+v, want 200", a)
		}
	}
}

func TestReadyAndHealth(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			if status, body := g.do(t, "GET", "/health", "", nil); status != 200 || body != `{"ok":true,"pushProtocol":1,"deliveryProtocol":2}` {
				t.Fatalf("health = %d %s", status, body)
			}
			if status, body := g.do(t, "GET", "/ready", "", nil); status != 200 || body != `{"ok":true}` {
				t.Fatalf("ready = %d %s", status, body)
			}
			g.svc.Store.Close()
			// The good answer is cached for 10 s, then the probe runs again.
			if status, _ := g.do(t, "GET", "/ready", "", nil); status != 200 {
				t.Fatalf("cached ready = %d", status)
			}
			g.clock.Advance(contract.ReadyCacheTTL)
			if status, body := g.do(t, "GET", "/ready", "", nil); status != 503 || body != `{"error":"dependency_unavailable"}` {
				t.Fatalf("ready with the database closed = %d %s", status, body)
			}
			// A request that needs the database is a 500 internal.
			if status, body := g.do(t, "POST", "/v1/host/challenge", `{"v":1,"hostPublicKeyB64":"`+mustKeypair(t).PublicKeyB64()+`"}`, g.freshIP()); status != 500 || body != `{"error":"internal"}` {
				t.Fatalf("challenge with the database closed = %d %s", status, body)
			}
		})
	}
}

func TestDrain(t *testing.T) {
	g := mustGateway(t, storetest.Dialects(t)[0])
	token := mustSignIn(t, g.mustHost(t))
	// Hold one request in flight: its body never ends until released.
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", g.srv.URL+"/v1/devices", pr)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := g.srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	go pw.Write([]byte(`{"v":1,`))
	// Wait until the server is serving it (its handler runs on another
	// goroutine, reading the body).
	deadline := time.Now().Add(5 * time.Second)
	for g.svc.Edge.InFlight() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the handler")
		}
		time.Sleep(time.Millisecond)
	}
	drained := make(chan error, 1)
	go func() { drained <- g.svc.Edge.Drain(context.Background()) }()
	for {
		if status, body := g.do(t, "GET", "/health", "", nil); status == 503 {
			if body != `{"error":"shutting_down"}` {
				t.Fatalf("while draining = %d %s", status, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("drain never began")
		}
	}
	select {
	case <-drained:
		t.Fatal("drain finished with a request in flight")
	default:
	}
	pw.Write([]byte(`"deviceId":"d","platform":"android","token":"` + strings.Repeat("a", 40) + `"}`))
	pw.Close()
	if status := <-done; status != 200 {
		t.Fatalf("in-flight request = %d, want 200", status)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}
