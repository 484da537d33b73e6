package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/hostclient"
)

// host is the signed-in side of a command: the client, its clock, and the
// session kept beside the key.
type host struct {
	c       *cli
	client  *hostclient.Client
	kp      hostclient.Keypair
	clock   *gatewayClock
	http    *http.Client
	kept    savedSession
	created bool // the key was made by this run
}

// connect loads (or creates) the key and restores the kept session.
func (c *cli) connect() (*host, error) {
	kp, created, err := loadOrCreateKey(c.keyPath)
	if err != nil {
		return nil, err
	}
	h := &host{c: c, kp: kp, clock: &gatewayClock{}, http: &http.Client{Timeout: 30 * time.Second}, created: created}
	h.client, err = hostclient.New(hostclient.Options{BaseURL: c.gateway, Origin: c.origin, Keypair: kp,
		HTTPClient: h.http, Clock: h.clock})
	if err != nil {
		return nil, err
	}
	if err := readJSON(sessionPath(c.keyPath), &h.kept); err != nil {
		return nil, err
	}
	if h.kept.Gateway == strings.TrimRight(c.gateway, "/") && h.kept.SessionToken != "" {
		h.client.SetSession(h.kept.SessionToken, h.kept.ExpiresAt)
	}
	return h, nil
}

// do runs op, and once more on the gateway's clock when op failed to sign
// in because the challenge's times are off by more than the host allows:
// the emulator's manual clock may be anywhere, and GET /_emulator/clock says
// where. Retrying is safe: the failed sign-in came before op's own request.
// The session is then kept beside the key.
func (h *host) do(ctx context.Context, op func() error) error {
	err := op()
	if errors.Is(err, hostclient.ErrIssuedInFuture) || errors.Is(err, hostclient.ErrExpired) {
		now, perr := h.emulatorNow(ctx)
		if perr != nil {
			return fmt.Errorf("%w (the host's clock and the gateway's differ by more than the host allows)", err)
		}
		h.clock.follow(now)
		err = op()
	}
	if serr := h.keepSession(); err == nil {
		err = serr
	}
	return err
}

// keepSession writes the client's session beside the key when it changed.
func (h *host) keepSession() error {
	token, expiresAt := h.client.Session()
	if token == "" || token == h.kept.SessionToken {
		return nil
	}
	h.kept = savedSession{Gateway: strings.TrimRight(h.c.gateway, "/"), SessionToken: token, ExpiresAt: expiresAt}
	return writeJSON(sessionPath(h.c.keyPath), h.kept)
}

// emulatorNow reads the emulator's manual clock; a real gateway (or the
// emulator on the real clock) answers 404.
func (h *host) emulatorNow(ctx context.Context) (time.Time, error) {
	var reading struct {
		Now int64 `json:"now"`
	}
	if err := getJSON(ctx, h.http, strings.TrimRight(h.c.gateway, "/")+"/_emulator/clock", &reading); err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(reading.Now), nil
}

// getJSON GETs url and decodes a 200 answer into v.
func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %d", url, resp.StatusCode)
	}
	return json.Unmarshal(body, v)
}

// gatewayClock is the host's clock: the real clock, or, once follow was
// called, the real clock moved by the offset to the gateway's.
type gatewayClock struct {
	// mu guards offset.
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the real time plus the offset.
func (g *gatewayClock) Now() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return clock.Real{}.Now().Add(g.offset)
}

// follow sets the offset so that Now reads gatewayNow at this moment.
func (g *gatewayClock) follow(gatewayNow time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.offset = gatewayNow.Sub(clock.Real{}.Now())
}
