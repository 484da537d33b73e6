package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/httpx"
)

// demoHost is the desktop the console acts as. A browser page cannot easily
// do the sign-in (an X25519 box and an HMAC proof), so the emulator holds a
// host key made at start and signs it in with shared/hostclient, over HTTP,
// through its own public routes, exactly as a desktop would: every host-side
// check of the challenge runs. The page receives the session bearer and then
// calls /v1/devices and /v1/send itself, so what it shows is what a real
// desktop gets from the public routes. Each start is a new demo host.
type demoHost struct {
	client      *hostclient.Client
	fingerprint string
	// mu serialises sign-ins, so that two pages share one session instead of
	// replacing each other's (a new session revokes the host's last one).
	mu sync.Mutex
}

// newDemoHost returns the demo host of the emulator reached at origin, whose
// transcripts name publicURL, on the emulator's clock (so sign-in works at
// any manual-clock time).
func newDemoHost(origin, publicURL string, clk clock.Clock) (*demoHost, error) {
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		return nil, err
	}
	c, err := hostclient.New(hostclient.Options{
		BaseURL: origin, Origin: publicURL, Keypair: kp, Clock: clk,
		HTTPClient: &http.Client{Timeout: 10 * time.Second},
	})
	if err != nil {
		return nil, err
	}
	return &demoHost{client: c, fingerprint: kp.Fingerprint()}, nil
}

// session returns the demo host's session, signing in when there is none or
// when stale, the token the page was refused with, is still the current one.
func (d *demoHost) session(ctx context.Context, stale string) (contract.SessionResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if token, _ := d.client.Session(); token == "" || token == stale {
		if err := d.client.SignIn(ctx); err != nil {
			return contract.SessionResponse{}, err
		}
	}
	token, expiresAt := d.client.Session()
	return contract.SessionResponse{SessionToken: token, ExpiresAt: expiresAt, HostFingerprint: d.fingerprint}, nil
}

// demoSession is POST /_emulator/demo/session {"stale": "<optional token>"}:
// the demo host's session bearer, as /v1/host/session answered it. A failed
// sign-in answers 502 with the host client's error, which names no secret.
func (c *control) demoSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stale string `json:"stale"`
	}
	body, err := httpx.ReadBody(w, r)
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		httpx.WriteError(w, contract.ErrInvalidRequest)
		return
	}
	s, err := c.demo.session(r.Context(), req.Stale)
	if err != nil {
		httpx.WriteJSON(w, http.StatusBadGateway, struct {
			Error  string `json:"error"`
			Detail string `json:"detail"`
		}{"demo_sign_in_failed", err.Error()})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s)
}
