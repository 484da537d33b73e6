package hostclient

import (
	"bytes"
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
	"onorca.dev/push/shared/contract"
)

// maxResponseBytes bounds how much of an answer the client reads. The largest
// legitimate answer, a full device list, is far smaller.
const maxResponseBytes = 1 << 20

// Options configures a [Client]. Every field but Origin and Wait is
// required.
type Options struct {
	// BaseURL is the gateway's URL, such as "https://push.onorca.dev"; a
	// trailing slash is ignored.
	BaseURL string
	// Origin is the gateway origin the host expects in transcripts
	// (ORCA_PUSH_PUBLIC_URL on the gateway). Empty means BaseURL without its
	// trailing slash.
	Origin string
	// Keypair is the host's key pair.
	Keypair Keypair
	// HTTPClient sends the requests.
	HTTPClient *http.Client
	// Clock is the host's clock, against which challenges are checked.
	Clock clock.Clock
	// Wait pauses before a request is sent again after a 503 with
	// Retry-After (see [RetryError]): for d, or until ctx ends, when it
	// returns an error wrapping ctx's. Nil means a real timer; tests pass a
	// func that records d and returns at once.
	Wait func(ctx context.Context, d time.Duration) error
}

// Client is a desktop host's client of the gateway. It caches one session and
// signs in again, once per call, when the gateway refuses it, and sends a
// request again when the gateway answers 503 with Retry-After (see
// [RetryError]). It is safe for concurrent use.
type Client struct {
	base   string
	origin string
	kp     Keypair
	hc     *http.Client
	clock  clock.Clock
	wait   func(context.Context, time.Duration) error

	// signInMu serializes sign-ins, so that concurrent calls refused with the
	// same stale token mint one new session rather than revoking each
	// other's (a new session replaces the host's previous one, §3).
	signInMu sync.Mutex

	// mu guards token and expiresAt.
	mu        sync.Mutex
	token     string
	expiresAt int64
}

// New returns a client for the gateway at o.BaseURL. It fails when a required
// option is missing.
func New(o Options) (*Client, error) {
	switch {
	case o.BaseURL == "":
		return nil, errors.New("hostclient: new: BaseURL is required")
	case o.Keypair.isZero():
		return nil, errors.New("hostclient: new: Keypair is required")
	case o.HTTPClient == nil:
		return nil, errors.New("hostclient: new: HTTPClient is required")
	case o.Clock == nil:
		return nil, errors.New("hostclient: new: Clock is required")
	}
	base := strings.TrimRight(o.BaseURL, "/")
	origin := o.Origin
	if origin == "" {
		origin = base
	}
	wait := o.Wait
	if wait == nil {
		wait = sleep
	}
	return &Client{base: base, origin: origin, kp: o.Keypair, hc: o.HTTPClient, clock: o.Clock, wait: wait}, nil
}

// Session returns the cached session token and its expiry in Unix
// milliseconds, or "" and 0 before the first sign-in.
func (c *Client) Session() (token string, expiresAt int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token, c.expiresAt
}

// SignIn runs the challenge and proof exchange and caches the new session,
// which replaces any earlier session of this host on the gateway. It returns
// an error from [Answer] when the challenge fails a host-side check,
// ErrSessionHost when the session names another host, and an [*APIError]
// when the gateway refuses.
func (c *Client) SignIn(ctx context.Context) error {
	c.signInMu.Lock()
	defer c.signInMu.Unlock()
	if err := c.signIn(ctx); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	return nil
}

// signIn does SignIn's work; the caller holds signInMu.
func (c *Client) signIn(ctx context.Context) error {
	body, err := encodeJSON(challengeRequest{V: 1, HostPublicKeyB64: c.kp.PublicKeyB64()})
	if err != nil {
		return err
	}
	var challenge contract.ChallengeResponse
	if err := c.do(ctx, http.MethodPost, "/v1/host/challenge", "", body, &challenge); err != nil {
		return err
	}
	proof, err := Answer(c.kp, c.origin, challenge, c.clock.Now())
	if err != nil {
		return err
	}
	body, err = encodeJSON(sessionRequest{V: 1, ChallengeID: challenge.ChallengeID, ProofB64: proof})
	if err != nil {
		return err
	}
	var session contract.SessionResponse
	if err := c.do(ctx, http.MethodPost, "/v1/host/session", "", body, &session); err != nil {
		return err
	}
	if session.HostFingerprint != c.kp.Fingerprint() {
		return ErrSessionHost
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token, c.expiresAt = session.SessionToken, session.ExpiresAt
	return nil
}

// ensureSession returns the cached token, signing in when there is none.
func (c *Client) ensureSession(ctx context.Context) (string, error) {
	if token, _ := c.Session(); token != "" {
		return token, nil
	}
	return c.renew(ctx, "")
}

// renew signs in unless another caller already replaced stale, and returns
// the current token.
func (c *Client) renew(ctx context.Context, stale string) (string, error) {
	c.signInMu.Lock()
	defer c.signInMu.Unlock()
	if token, _ := c.Session(); token != stale {
		return token, nil
	}
	if err := c.signIn(ctx); err != nil {
		return "", fmt.Errorf("sign in: %w", err)
	}
	token, _ := c.Session()
	return token, nil
}

// call sends an authenticated request, signing in first when there is no
// session, and again, once, when the gateway answers 401 invalid_token or
// session_expired, as real desktops do (reference-behaviour preamble). The
// error is wrapped with op.
func (c *Client) call(ctx context.Context, op, method, path string, body []byte, out any) error {
	token, err := c.ensureSession(ctx)
	if err == nil {
		err = c.do(ctx, method, path, token, body, out)
		if needsSignIn(err) {
			if token, err = c.renew(ctx, token); err == nil {
				err = c.do(ctx, method, path, token, body, out)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// needsSignIn reports whether err says the session is gone.
func needsSignIn(err error) bool {
	return errors.Is(err, contract.ErrInvalidToken) || errors.Is(err, contract.ErrSessionExpired)
}

// doOnce sends one request, with token as the bearer unless it is empty,
// and decodes a 2xx answer into out unless out is nil. A non-2xx answer is
// an [*APIError], or an [*unavailableError] that do retries.
func (c *Client) doOnce(ctx context.Context, method, path, token string, body []byte, out any) error {
	resp, err := c.send(ctx, method, path, token, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e) // a non-JSON body leaves Code empty
		return c.refusal(resp, e.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// send builds and sends one request.
func (c *Client) send(ctx context.Context, method, path, token string, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("send request: %w", err)
	}
	return resp, nil
}
