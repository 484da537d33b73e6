package routes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/functions/routes"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store/storetest"
)

// The HTTP fuzzer's budget: requests per database, and the seed of its
// choices. A run of go test makes defaultFuzzRequests with seed 1;
// ORCA_PUSH_TEST_HTTP_FUZZ=N makes N, and ORCA_PUSH_TEST_HTTP_FUZZ_SEED=S
// replays or varies a run (README, "Tests").
const (
	fuzzRequestsEnv     = "ORCA_PUSH_TEST_HTTP_FUZZ"
	fuzzSeedEnv         = "ORCA_PUSH_TEST_HTTP_FUZZ_SEED"
	defaultFuzzRequests = 400
)

// errorBody is the contract's error shape.
var errorBody = regexp.MustCompile(`^\{"error":"[a-z_]+"\}$`)

// TestHTTPFuzz sends requests made at random from valid ones (the
// contracttest bodies, a real challenge and proof, real ids) to every
// public route on both databases: bytes flipped, inserted (NUL, bytes that
// are not UTF-8, quotes, escapes, huge numbers), cut, repeated and spliced;
// random paths, methods and percent-encoded ids; good, bad and missing
// bearers; forged X-Forwarded-For lines; bodies over the cap. No answer may
// be a 5xx or an internal error, every refusal has the contract's error
// shape, and a refused request changes no row of any table (issue 26 §1:
// such a fuzzer found DELETE /v1/devices/%ff answered 500).
func TestHTTPFuzz(t *testing.T) {
	n := defaultFuzzRequests
	if v := os.Getenv(fuzzRequestsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			t.Fatalf("%s=%q, want a number of requests", fuzzRequestsEnv, v)
		}
	}
	seed := uint64(1)
	if v := os.Getenv(fuzzSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q, want a number", fuzzSeedEnv, v)
		}
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			t.Logf("%d requests, seed %d (%s, %s)", n, seed, fuzzRequestsEnv, fuzzSeedEnv)
			f := newFuzzer(t, mustGateway(t, d), seed)
			for i := range n {
				f.one(t, i)
			}
			if got := f.g.svc.Counters.Consume()[obs.RequestError]; got != 0 {
				t.Errorf("%d requests failed with an internal error", got)
			}
			t.Logf("answers by status: %v", f.statuses)
		})
	}
}

// fuzzer makes and checks the requests of one run. It sends them to the
// gateway's routes behind httpx.Misses, as the emulator serves them and as
// each deployed function's edge answers any path, so that every refusal is
// in the contract's shape.
type fuzzer struct {
	g        *gateway
	srv      *httptest.Server
	r        *rand.Rand
	token    string
	regs     []string
	seeds    map[string][]string // route → valid and invalid bodies
	statuses map[int]int
}

func newFuzzer(t *testing.T, g *gateway, seed uint64) *fuzzer {
	ctx := context.Background()
	h := g.mustHost(t)
	f := &fuzzer{g: g, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), token: mustSignIn(t, h),
		statuses: make(map[int]int), srv: httptest.NewServer(httpx.Misses(routes.Public(g.svc)))}
	t.Cleanup(f.srv.Close)
	for _, dev := range []string{"a", "b"} {
		id, err := h.Register(ctx, android(dev))
		if err != nil {
			t.Fatal(err)
		}
		f.regs = append(f.regs, id)
	}
	kp := mustKeypair(t)
	c, proof := g.challenge(t, kp)
	f.seeds = map[string][]string{
		"POST /v1/host/challenge": {`{"v":1,"hostPublicKeyB64":"` + kp.PublicKeyB64() + `"}`},
		"POST /v1/host/session":   {`{"v":1,"challengeId":"` + c.ChallengeID + `","proofB64":"` + proof + `"}`},
		"GET /v1/devices":         {""},
		"GET /health":             {""},
		"GET /ready":              {""},
	}
	for _, c := range contracttest.Registrations() {
		f.seeds["POST /v1/devices"] = append(f.seeds["POST /v1/devices"], c.Body)
	}
	for _, c := range contracttest.Sends() {
		body := c.Body
		if f.r.IntN(2) == 0 {
			body = strings.ReplaceAll(body, `"r1"`, `"`+f.regs[0]+`"`)
		}
		f.seeds["POST /v1/send"] = append(f.seeds["POST /v1/send"], body)
	}
	for _, c := range contracttest.Receipts() {
		f.seeds["POST /v1/receipts"] = append(f.seeds["POST /v1/receipts"], c.Body)
	}
	return f
}

// interesting are inserted into bodies and ids.
var interesting = []string{
	"\x00", "\xff", "\xc3", "\xed\xa0\x80", "\xc0\xaf", "\x7f", "\u0085", "\u2028", "😀", `"`, `\`, `\u0000`,
	`\ud800`, `\"`, "{", "}", "[", "]", ",", ":", "null", "true", "-0", "1e999", "9007199254740993", "-1",
	`"v":2`, `"v":1`, " ", "\t", "\r\n", strings.Repeat("a", 200), `{"a":`, "[[[[[[[[[[",
}

// routes are the public routes, the ones a mux refuses, and paths near them.
var fuzzRoutes = []string{
	"POST /v1/host/challenge", "POST /v1/host/session", "POST /v1/devices", "GET /v1/devices",
	"DELETE /v1/devices/", "POST /v1/send", "POST /v1/receipts", "GET /health", "GET /ready",
}

func (f *fuzzer) one(t *testing.T, i int) {
	t.Helper()
	route := fuzzRoutes[f.r.IntN(len(fuzzRoutes))]
	method, path, _ := strings.Cut(route, " ")
	seeds := f.seeds[route]
	body := ""
	if len(seeds) > 0 {
		body = seeds[f.r.IntN(len(seeds))]
	}
	if path == "/v1/devices/" {
		path += f.id()
	}
	switch f.r.IntN(10) {
	case 0:
		method = []string{"GET", "PUT", "PATCH", "DELETE", "POST", "OPTIONS", "HEAD"}[f.r.IntN(7)]
	case 1:
		path += []string{"/", "x", "/..", "%2f", "?q=" + url.QueryEscape(f.mutate("x")), "//"}[f.r.IntN(6)]
	}
	for range f.r.IntN(4) {
		body = f.mutate(body)
	}
	header := f.header(route)
	f.g.clock.Advance(time.Duration(f.r.IntN(500)) * time.Millisecond)

	before := f.g.rowCounts(t)
	status, got := f.do(t, method, path, body, header)
	f.statuses[status]++
	where := fmt.Sprintf("request %d: %s %q %q %v", i, method, path, truncate(body), header)
	switch {
	case status >= 500:
		t.Fatalf("%s = %d %s, want no 5xx", where, status, got)
	case status >= 400 && method != "HEAD" && !errorBody.MatchString(got):
		t.Fatalf("%s = %d %q, want the contract's error shape", where, status, got)
	}
	var reg contract.RegisterResponse
	if method == "POST" && path == "/v1/devices" && status == http.StatusOK && json.Unmarshal([]byte(got), &reg) == nil {
		f.regs = append(f.regs, reg.RegistrationID) // later deletes and sends find it
	}
	if status >= 400 {
		if after := f.g.rowCounts(t); !equalCounts(before, after) {
			t.Fatalf("%s = %d %s changed rows: before %v, after %v", where, status, got, before, after)
		}
	}
}

// do sends one request and returns its status and trimmed body.
func (f *fuzzer) do(t *testing.T, method, path, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// id returns a registration id for a path: a real one, one mutated, or
// random bytes percent-encoded.
func (f *fuzzer) id() string {
	switch f.r.IntN(4) {
	case 0:
		return f.regs[f.r.IntN(len(f.regs))]
	case 1:
		return url.PathEscape(f.mutate(f.regs[0]))
	case 2:
		b := make([]byte, 1+f.r.IntN(8))
		for i := range b {
			b[i] = byte(f.r.IntN(256))
		}
		return url.PathEscape(string(b))
	default:
		return url.PathEscape(interesting[f.r.IntN(len(interesting))])
	}
}

// header returns a request's bearer and client address.
func (f *fuzzer) header(route string) http.Header {
	h := f.g.freshIP()
	switch f.r.IntN(6) {
	case 0:
	case 1:
		h.Set("Authorization", "Bearer "+headerValue(f.mutate(f.token)))
	case 2:
		h.Set("Authorization", headerValue(f.mutate("Bearer "+f.token)))
	default:
		h.Set("Authorization", "Bearer "+f.token)
	}
	if f.r.IntN(8) == 0 {
		h.Add("X-Forwarded-For", headerValue(f.mutate("203.0.113.7, 10.0.0.1")))
	}
	if f.r.IntN(8) == 0 {
		h.Set("Content-Type", headerValue(f.mutate("application/json")))
	}
	return h
}

// headerValue drops the bytes that net/http's client refuses to send in a
// header value (controls other than tab): they never reach a server.
func headerValue(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// mutate changes s in one random way.
func (f *fuzzer) mutate(s string) string {
	b := []byte(s)
	at := func() int { return f.r.IntN(len(b) + 1) }
	switch f.r.IntN(9) {
	case 0: // flip a byte
		if len(b) > 0 {
			b[f.r.IntN(len(b))] = byte(f.r.IntN(256))
		}
	case 1, 2: // insert something interesting
		i := at()
		b = append(b[:i:i], append([]byte(interesting[f.r.IntN(len(interesting))]), b[i:]...)...)
	case 3: // cut a range
		i := at()
		j := i + f.r.IntN(len(b)-i+1)
		b = append(b[:i:i], b[j:]...)
	case 4: // repeat a range
		i := at()
		j := i + f.r.IntN(len(b)-i+1)
		b = append(b[:j:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
	case 5: // truncate
		b = b[:at()]
	case 6: // splice with another route's body
		other := f.seeds[fuzzRoutes[f.r.IntN(len(fuzzRoutes))]]
		if len(other) > 0 {
			o := other[f.r.IntN(len(other))]
			b = append(b[:at()], o[f.r.IntN(len(o)+1):]...)
		}
	case 7: // past the body cap
		if f.r.IntN(4) == 0 {
			b = append(b, strings.Repeat(" ", contract.MaxBodyBytes)...)
		}
	case 8: // a value swapped for a number or a string
		b = []byte(strings.Replace(string(b), `":"`, `":`+interesting[f.r.IntN(len(interesting))]+`,"x":"`, 1))
	}
	return string(b)
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// truncate shortens a body for a failure message.
func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
