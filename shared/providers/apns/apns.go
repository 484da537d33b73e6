package apns

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/token"
	"golang.org/x/net/http2"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
)

// Reasons of outcomes this package makes itself; the others are APNs'
// reason codes ("Unregistered", "BadTopic", ...).
const (
	// ReasonNotConfigured: the client has no auth key (reference §6).
	ReasonNotConfigured = "apns_not_configured"
	// ReasonTimeout: no answer within the request deadline (§7.1).
	ReasonTimeout = "apns_timeout"
	// ReasonToken: the provider token could not be re-signed.
	ReasonToken = "apns_token"
)

// ErrBadOptions is returned by New when Clock is missing, or when a key is
// given without its KeyID and TeamID.
var ErrBadOptions = errors.New("apns: bad options")

// Options configures [New].
type Options struct {
	// Key is the .p8 auth key in PEM. Empty leaves the client unconfigured:
	// every Send answers Terminal apns_not_configured.
	Key []byte
	// KeyID and TeamID are the token's kid and iss; required with Key.
	KeyID  string
	TeamID string
	// Topic is apns-topic; empty means contract.DefaultAPNSTopic.
	Topic string
	// Clock decides expiry, token re-signing and Retry-After dates. Required.
	Clock clock.Clock
	// SandboxURL and ProductionURL override the APNs hosts (stand-ins);
	// empty means apns2.HostDevelopment and apns2.HostProduction.
	SandboxURL    string
	ProductionURL string
	// HTTPClient, when set, supplies the transport beneath the client's own
	// (which adds the token and reads Retry-After). When nil, an HTTP/2
	// transport trusting RootCAs is built.
	HTTPClient *http.Client
	// RootCAs are the roots trusted when HTTPClient is nil; nil means the
	// system's.
	RootCAs *x509.CertPool
}

// Client sends to APNs. It is safe for concurrent use and meant to live as
// long as the process: each environment keeps one multiplexed connection.
type Client struct {
	clock      clock.Clock
	configured bool
	topic      string
	signer     *signer
	transport  *transport
	sandbox    *apns2.Client
	production *apns2.Client
}

// New returns a client. It signs the first provider token at once, so a bad
// key is an error here rather than a 403 on every send (go-dependencies
// §2e). It opens no connection.
func New(opts Options) (*Client, error) {
	if opts.Clock == nil {
		return nil, fmt.Errorf("%w: Clock is required", ErrBadOptions)
	}
	c := &Client{clock: opts.Clock, topic: opts.Topic}
	if c.topic == "" {
		c.topic = contract.DefaultAPNSTopic
	}
	if len(opts.Key) == 0 {
		return c, nil
	}
	if opts.KeyID == "" || opts.TeamID == "" {
		return nil, fmt.Errorf("%w: KeyID and TeamID are required with Key", ErrBadOptions)
	}
	key, err := token.AuthKeyFromBytes(opts.Key)
	if err != nil {
		return nil, fmt.Errorf("apns: auth key: %w", err)
	}
	c.signer, err = newSigner(opts.Clock, &token.Token{AuthKey: key, KeyID: opts.KeyID, TeamID: opts.TeamID})
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		hc.Timeout = opts.HTTPClient.Timeout
		c.transport = &transport{base: opts.HTTPClient.Transport}
		if c.transport.base == nil {
			c.transport.base = http.DefaultTransport
		}
	} else {
		c.transport = &transport{base: newHTTP2Transport(opts.RootCAs)}
	}
	hc.Transport = c.transport
	c.sandbox = &apns2.Client{Host: or(opts.SandboxURL, apns2.HostDevelopment), HTTPClient: hc}
	c.production = &apns2.Client{Host: or(opts.ProductionURL, apns2.HostProduction), HTTPClient: hc}
	c.configured = true
	return c, nil
}

// newHTTP2Transport speaks HTTP/2 only, as APNs requires, trusting roots
// (nil: the system's), and pings an idle connection after
// apns2.ReadIdleTimeout, as apns2's own transport does.
//
// It is x/net's http2.Transport, deprecated in favour of net/http's HTTP/2,
// on purpose: x/net's dials once for concurrent first requests, while
// net/http's opened 16 connections for 32 concurrent first sends (1 only
// with MaxConnsPerHost 1), and net/http's cost about 15% more CPU per send
// in BenchmarkAPNs.
func newHTTP2Transport(roots *x509.CertPool) http.RoundTripper {
	//lint:ignore SA1019 see above: one dial per host, and cheaper per send
	return &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ReadIdleTimeout: apns2.ReadIdleTimeout}
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Send makes one APNs request for m to t and maps the answer. It answers
// Terminal apns_not_configured without a key, and Terminal expired, with no
// request, when m's deadline has passed. The request is bounded by
// contract.ProviderTimeout.
//
// When APNs answers 403 ExpiredProviderToken (the token's iat is over an
// hour old by Apple's clock, which a clock set back can cause), Send signs a
// new token and makes the request once more: the notification was refused
// for the gateway's credentials, not for anything in it, and a retry task
// would only wait in vain.
func (c *Client) Send(ctx context.Context, t push.Target, m push.Message) push.Outcome {
	if !c.configured {
		return push.Outcome{Kind: push.Terminal, Reason: ReasonNotConfigured}
	}
	o, bearer := c.send(ctx, t, m)
	if o.Reason == apns2.ReasonExpiredProviderToken {
		c.signer.expire(bearer)
		o, _ = c.send(ctx, t, m)
	}
	return o
}

// send makes one request with the current provider token and returns the
// outcome and the token it used.
func (c *Client) send(ctx context.Context, t push.Target, m push.Message) (push.Outcome, string) {
	if m.Deadline <= clock.Millis(c.clock) {
		return push.Outcome{Kind: push.Terminal, Reason: push.ReasonExpired}, ""
	}
	bearer, err := c.signer.bearer()
	if err != nil {
		return push.Outcome{Kind: push.Retry, Reason: ReasonToken}, ""
	}
	ex := &exchange{bearer: bearer}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, exchangeKey{}, ex), contract.ProviderTimeout)
	defer cancel()
	res, err := c.client(t.APNSEnvironment).PushWithContext(ctx, notification(t.Token, c.topic, m))
	return c.outcome(res, err, ex), bearer
}

// client returns the environment's client; a missing environment is
// production (reference-behaviour §7.1).
func (c *Client) client(env contract.APNSEnvironment) *apns2.Client {
	if env == contract.APNSSandbox {
		return c.sandbox
	}
	return c.production
}

// Close closes idle connections. Sends may still follow; they reconnect.
func (c *Client) Close() {
	if c.configured {
		c.transport.CloseIdleConnections()
	}
}
