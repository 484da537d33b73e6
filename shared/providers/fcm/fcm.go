package fcm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/messaging"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
)

// Reasons of outcomes this package makes itself; the others are FCM's
// status strings ("UNREGISTERED", "INVALID_ARGUMENT", "UNAVAILABLE", ...).
const (
	// ReasonInvalidMessage: the SDK refused the message before sending it.
	ReasonInvalidMessage = "fcm_invalid_message"
)

// scopes are the OAuth scopes of FCM's v1 API.
var scopes = []string{
	"https://www.googleapis.com/auth/cloud-platform",
	"https://www.googleapis.com/auth/firebase.messaging",
}

// Sentinel errors.
var (
	// ErrBadOptions is returned by New when Clock is missing.
	ErrBadOptions = errors.New("fcm: bad options")
	// ErrNotAccepted is returned by ValidateOnly when FCM did not accept
	// the dry run; the error text adds the outcome's kind and reason.
	ErrNotAccepted = errors.New("fcm: message not accepted")
	// errExpired is returned by expiryCheck for a request whose send's
	// deadline passed before it could be made.
	errExpired = errors.New("fcm: deadline passed before the request")
)

// Options configures [New].
type Options struct {
	// ProjectID is the Firebase project; empty means
	// contract.DefaultFCMProjectID.
	ProjectID string
	// Endpoint, when set, replaces FCM's URL (stand-ins): a full URL with
	// its /v1 prefix, such as http://127.0.0.1:9099/v1. Requests then carry
	// no credentials.
	Endpoint string
	// ClientOptions supply credentials for the real FCM (none means
	// application default credentials), and may name an endpoint.
	// option.WithHTTPClient is not allowed: the client builds its own.
	ClientOptions []option.ClientOption
	// Clock decides expiry, ttl and Retry-After dates. Required.
	Clock clock.Clock
	// DataOnly sends every message in Gen D's data-only form
	// (ORCA_PUSH_FCM_MESSAGE=data), which today's Orca phones need. When
	// false, only sealed alerts go data-only and everything else keeps the
	// notification form the contract describes (decisions table).
	DataOnly bool
}

// Client sends to FCM. It is safe for concurrent use.
type Client struct {
	clock    clock.Clock
	dataOnly bool
	base     *http.Transport
	messages *messaging.Client
}

// New returns a client. It sets the project id explicitly, so the SDK never
// goes looking for one (go-dependencies §2d). It opens no connection, but
// finding application default credentials may read files or the
// environment.
func New(ctx context.Context, opts Options) (*Client, error) {
	if opts.Clock == nil {
		return nil, fmt.Errorf("%w: Clock is required", ErrBadOptions)
	}
	project := opts.ProjectID
	if project == "" {
		project = contract.DefaultFCMProjectID
	}
	c := &Client{clock: opts.Clock, dataOnly: opts.DataOnly, base: newBaseTransport()}
	auth := append([]option.ClientOption{option.WithScopes(scopes...)}, opts.ClientOptions...)
	if opts.Endpoint != "" {
		auth = append(auth, option.WithoutAuthentication())
	}
	// The deadline check sits beneath the credentials, so it runs after
	// the access token was fetched (reference-behaviour §4.5); the single
	// attempt guard sits above them, so a token failure is not retried.
	authed, err := htransport.NewTransport(ctx, &expiryCheck{base: c.base, clock: opts.Clock}, auth...)
	if err != nil {
		return nil, fmt.Errorf("fcm: credentials: %w", err)
	}
	hc := &http.Client{
		Transport: &singleAttempt{base: authed},
		// Redirects are an error (reference-behaviour §7.2).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	// The SDK takes the endpoint from the options and the client as is.
	appOpts := append(append([]option.ClientOption(nil), opts.ClientOptions...), option.WithHTTPClient(hc))
	if opts.Endpoint != "" {
		appOpts = append(appOpts, option.WithEndpoint(opts.Endpoint))
	}
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project}, appOpts...)
	if err != nil {
		return nil, fmt.Errorf("fcm: new app: %w", err)
	}
	if c.messages, err = app.Messaging(ctx); err != nil {
		return nil, fmt.Errorf("fcm: messaging client: %w", err)
	}
	return c, nil
}

// newBaseTransport is net/http's default transport with more idle
// connections per host, as Google's own transport has for FCM's load.
func newBaseTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Ping an idle HTTP/2 connection, as Google's transport does, so a
		// dead one is noticed before a send stalls on it.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 31 * time.Second},
	}
}

// Send makes one FCM request for m to t and maps the answer. It answers
// Terminal expired, with no request, when m's deadline has passed, also
// when it passes while the access token is fetched. The request is bounded
// by contract.ProviderTimeout.
func (c *Client) Send(ctx context.Context, t push.Target, m push.Message) push.Outcome {
	now := clock.Millis(c.clock)
	if m.Deadline <= now {
		return push.Outcome{Kind: push.Terminal, Reason: push.ReasonExpired}
	}
	a := &attempt{deadline: m.Deadline}
	ctx, cancel := a.begin(ctx)
	defer cancel()
	_, err := c.messages.Send(ctx, build(m, t.Token, now, c.dataOnly))
	return c.outcome(err, a)
}

// ValidateOnly sends a dry run of a typical alert to token (FCM's
// validate_only), for the deploy probe. It returns nil when FCM accepted
// it, else an error wrapping ErrNotAccepted.
func (c *Client) ValidateOnly(ctx context.Context, token string) error {
	now := clock.Millis(c.clock)
	deadline := now + contract.EventLifetime.Milliseconds()
	m := push.Build("validate-only", []contract.Notification{{
		Epoch: "validate-only", Source: contract.SourcePlugin, Title: push.SummaryTitle, Body: "validate-only",
	}}, deadline)
	a := &attempt{deadline: deadline}
	ctx, cancel := a.begin(ctx)
	defer cancel()
	_, err := c.messages.SendDryRun(ctx, build(m, token, now, c.dataOnly))
	if o := c.outcome(err, a); o.Kind != push.Sent {
		return fmt.Errorf("%w: %s %s", ErrNotAccepted, o.Kind, o.Reason)
	}
	return nil
}

// Close closes idle connections. Sends may still follow; they reconnect.
func (c *Client) Close() { c.base.CloseIdleConnections() }
