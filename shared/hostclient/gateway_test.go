package hostclient_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
	"onorca.dev/push/shared/hostclient"
)

// fakeGateway answers the host routes minimally, with the real contract
// decoders and the real hostauth, so that the client's requests are checked
// against the contract's schemas and its proofs against the gateway's check.
type fakeGateway struct {
	t     *testing.T
	clock *clock.Manual
	url   string

	// mu guards the fields below.
	mu         sync.Mutex
	challenges map[string]hostauth.Challenge
	sessions   map[string]int64 // token hash → expiresAt
	signIns    int
	calls      map[string]int // "METHOD /path" → requests seen
	sendSizes  []int
	sent       []contract.Notification
	devices    []contract.Device
	forced     map[string]*contract.Error // "METHOD /path" → answer
	nextID     int
}

// mustGateway starts a fake gateway on 127.0.0.1:0 and returns it with a
// client for the host key pair 0x07×32.
func mustGateway(t *testing.T) (*fakeGateway, *hostclient.Client) {
	t.Helper()
	g := &fakeGateway{
		t:          t,
		clock:      clock.NewManual(time.UnixMilli(nowMs)),
		challenges: map[string]hostauth.Challenge{},
		sessions:   map[string]int64{},
		calls:      map[string]int{},
		forced:     map[string]*contract.Error{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/host/challenge", g.challenge)
	mux.HandleFunc("POST /v1/host/session", g.session)
	mux.HandleFunc("POST /v1/devices", g.auth(g.register))
	mux.HandleFunc("GET /v1/devices", g.auth(g.list))
	mux.HandleFunc("DELETE /v1/devices/{registrationId}", g.auth(g.delete))
	mux.HandleFunc("POST /v1/send", g.auth(g.send))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Method + " " + r.URL.Path
		g.mu.Lock()
		g.calls[route]++
		forced := g.forced[route]
		g.mu.Unlock()
		if forced != nil && strings.HasPrefix(r.URL.Path, "/v1/host/") {
			writeError(w, forced)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	c, err := hostclient.New(hostclient.Options{
		BaseURL:    srv.URL + "/",
		Keypair:    mustKeypairFrom(t, 0x07),
		HTTPClient: srv.Client(),
		Clock:      g.clock,
	})
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	return g, c
}

// count returns how many requests route has seen.
func (g *fakeGateway) count(route string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[route]
}

// record is what the gateway saw, copied out under its lock.
type record struct {
	signIns   int
	sendSizes []int
	sent      []contract.Notification
}

// snapshot returns what the gateway has seen so far.
func (g *fakeGateway) snapshot() record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return record{signIns: g.signIns, sendSizes: slices.Clone(g.sendSizes), sent: slices.Clone(g.sent)}
}

// force makes route answer e (after authentication, for bearer routes).
func (g *fakeGateway) force(route string, e *contract.Error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forced[route] = e
}

// dropSessions forgets every session, as a newer sign-in elsewhere would.
func (g *fakeGateway) dropSessions() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.sessions)
}

func writeError(w http.ResponseWriter, e *contract.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	fmt.Fprintf(w, `{"error":%q}`, e.Code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// body reads the request body, answering 400 when it cannot.
func body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, contract.MaxBodyBytes+1))
	if err != nil || len(b) > contract.MaxBodyBytes {
		writeError(w, contract.ErrInvalidRequest)
		return nil, false
	}
	return b, true
}

func (g *fakeGateway) challenge(w http.ResponseWriter, r *http.Request) {
	b, ok := body(w, r)
	if !ok {
		return
	}
	req, err := contract.DecodeChallengeRequest(b)
	if err != nil {
		writeError(w, contract.ErrInvalidRequest)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextID++
	id := fmt.Sprintf("challenge-%d", g.nextID)
	c, err := hostauth.NewChallenge(rand.Reader, g.url, req.HostPublicKey, id, clock.Millis(g.clock))
	if err != nil {
		writeError(w, contract.ErrInternal)
		return
	}
	g.challenges[id] = c
	writeJSON(w, c.Response)
}

func (g *fakeGateway) session(w http.ResponseWriter, r *http.Request) {
	b, ok := body(w, r)
	if !ok {
		return
	}
	req, err := contract.DecodeSessionRequest(b)
	if err != nil {
		writeError(w, contract.ErrInvalidRequest)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.challenges[req.ChallengeID]
	if !ok {
		writeError(w, contract.ErrInvalidChallenge)
		return
	}
	delete(g.challenges, req.ChallengeID)
	now := clock.Millis(g.clock)
	if now > c.ExpiresAt || !hostauth.CheckProof(req.ProofB64, c.ProofHash) {
		writeError(w, contract.ErrInvalidProof)
		return
	}
	token, hash, err := hostauth.NewSessionToken(rand.Reader)
	if err != nil {
		writeError(w, contract.ErrInternal)
		return
	}
	clear(g.sessions) // one session per host (reference-behaviour §3)
	expiresAt := now + contract.SessionTTL.Milliseconds()
	g.sessions[hash] = expiresAt
	g.signIns++
	writeJSON(w, contract.SessionResponse{SessionToken: token, ExpiresAt: expiresAt, HostFingerprint: c.HostFingerprint})
}

// auth wraps a bearer route as reference-behaviour §2.4 steps 2 and 4 do.
func (g *fakeGateway) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		token = strings.TrimSpace(token)
		g.mu.Lock()
		expiresAt, known := g.sessions[hostauth.HashToken(token)]
		forced := g.forced[r.Method+" "+r.URL.Path]
		g.mu.Unlock()
		switch {
		case !strings.EqualFold(scheme, "bearer") || token == "" || !known:
			writeError(w, contract.ErrInvalidToken)
		case clock.Millis(g.clock) > expiresAt:
			writeError(w, contract.ErrSessionExpired)
		case forced != nil:
			writeError(w, forced)
		default:
			next(w, r)
		}
	}
}

func (g *fakeGateway) register(w http.ResponseWriter, r *http.Request) {
	b, ok := body(w, r)
	if !ok {
		return
	}
	req, err := contract.DecodeRegisterRequest(b)
	if err != nil {
		writeError(w, contract.ErrInvalidRequest)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextID++
	id := fmt.Sprintf("reg-%d", g.nextID)
	g.devices = append(g.devices, contract.Device{RegistrationID: id, DeviceID: req.DeviceID, Platform: req.Platform})
	writeJSON(w, contract.RegisterResponse{RegistrationID: id})
}

func (g *fakeGateway) list(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	writeJSON(w, contract.DeviceList{Devices: append([]contract.Device{}, g.devices...)})
}

func (g *fakeGateway) delete(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, d := range g.devices {
		if d.RegistrationID == r.PathValue("registrationId") {
			g.devices = append(g.devices[:i], g.devices[i+1:]...)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, contract.ErrNotFound)
}

func (g *fakeGateway) send(w http.ResponseWriter, r *http.Request) {
	b, ok := body(w, r)
	if !ok {
		return
	}
	req, err := contract.DecodeSendRequest(b)
	if err != nil {
		writeError(w, contract.ErrInvalidRequest)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sendSizes = append(g.sendSizes, len(req.RegistrationIDs))
	g.sent = append(g.sent, req.Notification)
	var resp contract.SendResponse
	for _, id := range req.RegistrationIDs {
		resp.Results = append(resp.Results, contract.SendResult{RegistrationID: id, Status: contract.StatusQueued})
	}
	writeJSON(w, resp)
}
