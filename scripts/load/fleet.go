package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

// target is the gateway under load and what every mode shares.
type target struct {
	gateway string
	clock   clock.Clock
	stdout  io.Writer
	// base carries every request, keeping enough idle connections for the
	// requests in flight; plain sends the tool's own (health, inbox).
	base  *http.Transport
	plain *http.Client
	// busy counts the 503 answers the hosts received; hostclient retried
	// each after its Retry-After, or gave up on the last.
	busy atomic.Int64
}

func newTarget(gateway string, maxInflight int, clk clock.Clock, stdout io.Writer) *target {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns = max(maxInflight, 100)
	base.MaxIdleConnsPerHost = max(maxInflight, 100)
	return &target{gateway: gateway, clock: clk, stdout: stdout, base: base, plain: &http.Client{Transport: base}}
}

// hostTransport sends one host's requests with its own client IP in
// X-Forwarded-For, as the gateway sees real desktops behind its load
// balancer, so the per-IP sign-in bucket meters hosts, not the tool. It
// counts 503 answers.
type hostTransport struct {
	ip string
	t  *target
}

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", h.ip)
	resp, err := h.t.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		h.t.busy.Add(1)
	}
	return resp, err
}

// host is one desktop with its phones, alternately an iPhone and an Android
// phone.
type host struct {
	client *hostclient.Client
	regs   []string
	tokens []string
}

// fleet is the hosts a run sends from. Request j goes to host j mod n, as
// that host's (j/n)-th request, so every host gets an even share of the
// load and its phones take turns.
type fleet struct {
	hosts []*host
	// next is the index of the next request (take).
	next atomic.Int64
	// queued counts the registrations answered queued: the alerts the
	// stand-ins should receive.
	queued atomic.Int64
}

// hostsFor returns how many hosts carry total requests at rate without any
// host starting more alerts than its quota (reference-behaviour §4.3) or
// sending faster than its request bucket refills (§2.6). The bucket holds
// more than a host's quota and registrations take, so the quota bounds how
// much a host sends and the refill rate keeps its pace a desktop's.
func hostsFor(rate, total float64) int {
	byQuota := math.Ceil(total / contract.AlertQuota)
	byRate := math.Ceil(rate / (contract.HostPerMinute / contract.BucketWindow.Seconds()))
	return max(1, int(byQuota), int(byRate))
}

// provision signs in n new hosts and registers phones phones for each, 16
// hosts at a time.
func (t *target) provision(ctx context.Context, n, phones int) (*fleet, error) {
	hosts := make([]*host, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			h, err := t.newHost(gctx, i, phones)
			hosts[i] = h
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("provision %d hosts: %w", n, err)
	}
	return &fleet{hosts: hosts}, nil
}

func (t *target) newHost(ctx context.Context, i, phones int) (*host, error) {
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		return nil, err
	}
	// 198.18.0.0/15 is the range set aside for benchmarks (RFC 2544).
	ip := fmt.Sprintf("198.%d.%d.%d", 18+i>>16, i>>8&255, i&255)
	c, err := hostclient.New(hostclient.Options{BaseURL: t.gateway, Keypair: kp,
		HTTPClient: &http.Client{Transport: hostTransport{ip: ip, t: t}}, Clock: t.clock})
	if err != nil {
		return nil, err
	}
	h := &host{client: c}
	for j := range phones {
		b := make([]byte, 32)
		rand.Read(b)
		p := hostclient.RegisterParams{DeviceID: "phone-" + strconv.Itoa(j), Platform: contract.PlatformIOS,
			Token: hex.EncodeToString(b), APNSEnvironment: contract.APNSSandbox}
		if j%2 == 1 {
			p = hostclient.RegisterParams{DeviceID: p.DeviceID, Platform: contract.PlatformAndroid, Token: "load:" + p.Token}
		}
		id, err := c.Register(ctx, p)
		if err != nil {
			return nil, err
		}
		h.regs, h.tokens = append(h.regs, id), append(h.tokens, p.Token)
	}
	return h, nil
}

// take returns the index of the fleet's next request.
func (f *fleet) take() int64 { return f.next.Add(1) - 1 }

// joins returns when request j's host joins a load whose hosts are spread
// over d from start: host h sends nothing due before start + d·u(h), where
// u(h) is the fractional part of h·(√5−1)/2, a sequence that covers [0, 1)
// evenly for any number of hosts. The hosts join in that order, not in
// the order of their turns, so that a host's first request, the first of
// its turns after it joined, is as likely to fall early as late in a
// window: joining in turn order bunches the first requests when a host's
// turns are far apart (400 hosts at 400/s came in two clusters).
func (f *fleet) joins(j int64, start time.Time, d time.Duration) time.Time {
	_, u := math.Modf(float64(j%int64(len(f.hosts))) * goldenFraction)
	return start.Add(time.Duration(float64(d) * u))
}

// goldenFraction is (√5−1)/2: the multiples of it, modulo 1, spread evenly
// over [0, 1) however many are taken (fleet.joins).
const goldenFraction = 0.6180339887498949

// errNoQuota is the outcome of a request the fleet had no host left for:
// every host has started its alert quota.
const errNoQuota = "no_quota_left"

// record is one request: when it was due to start (open loop) or started
// (closed loop), when its answer was read, and why it failed, empty when
// every registration was queued.
type record struct {
	start, done time.Time
	fail        string
}

// fire sends the fleet's request j, one alert to k registrations of its
// host, with its own deadline, and records it from start.
func (t *target) fire(ctx context.Context, f *fleet, j int64, k int, timeout time.Duration, start time.Time) record {
	n := int64(len(f.hosts))
	if j >= n*contract.AlertQuota {
		return record{start: start, done: start, fail: errNoQuota}
	}
	h, round := f.hosts[j%n], int(j/n)
	regs := make([]string, k)
	for x := range regs {
		regs[x] = h.regs[(round*k+x)%len(h.regs)]
	}
	id := "load-" + strconv.FormatInt(j, 10)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := h.client.Send(ctx, regs, contract.Notification{NotificationID: id, Seq: j, Epoch: "load",
		Source: contract.SourcePlugin, AgentState: contract.AgentFinished, Title: "Load", Body: id})
	done := t.clock.Now()
	queued := 0
	for _, r := range res {
		if r.Status == contract.StatusQueued {
			queued++
		}
	}
	f.queued.Add(int64(queued))
	return record{start: start, done: done, fail: classify(res, err, k)}
}

// classify names a request's failure for the report, or returns "" when
// each of its k registrations was queued.
func classify(res []contract.SendResult, err error, k int) string {
	var re *hostclient.RetryError
	var api *hostclient.APIError
	switch {
	case errors.As(err, &re):
		return "gave_up_" + strconv.Itoa(re.Last.Status) + "_" + re.Last.Code
	case errors.As(err, &api):
		return "http_" + strconv.Itoa(api.Status) + "_" + api.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case err != nil:
		return "transport"
	}
	for _, r := range res {
		if r.Status != contract.StatusQueued {
			return "status_" + string(r.Status)
		}
	}
	if len(res) != k {
		return "missing_results"
	}
	return ""
}
