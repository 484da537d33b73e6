package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
)

// errUsage is returned for a missing mode or a flag out of range.
var errUsage = errors.New("usage")

const usage = "load closed|open|lone|burst [flags]; load <mode> -h lists the flags"

// options are the flags of every mode.
type options struct {
	gateway     string
	ready       time.Duration
	timeout     time.Duration
	regs        []int
	phones      int
	hosts       int
	duration    time.Duration
	warmup      time.Duration
	stagger     time.Duration
	rate        float64
	concurrency []int
	maxInflight int
	deliveries  bool
	timeline    bool
	alerts      int
	bursts      []int
	window      time.Duration
}

// run parses args, waits for the gateway to answer /health and runs the
// mode args[0] names. getenv supplies the emulator's environment, from which
// the coalescing window is read as the emulator reads it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		fmt.Fprintln(stdout, "usage:", usage)
		return flag.ErrHelp
	case len(args) == 0 || strings.HasPrefix(args[0], "-"):
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	mode := args[0]
	o, err := parse(mode, args[1:], getenv, stdout)
	if err != nil {
		return err
	}
	t := newTarget(o.gateway, o.maxInflight, clock.Real{}, stdout)
	if err := t.waitReady(ctx, o.ready); err != nil {
		return err
	}
	switch mode {
	case "open":
		return t.runOpen(ctx, o)
	case "closed":
		return t.runClosed(ctx, o)
	case "burst":
		return t.runBurst(ctx, o)
	default:
		return t.runLone(ctx, o)
	}
}

// parse reads the flags of mode.
func parse(mode string, args []string, getenv func(string) string, stdout io.Writer) (options, error) {
	var o options
	if mode != "open" && mode != "closed" && mode != "lone" && mode != "burst" {
		return o, fmt.Errorf("%w: unknown mode %q; %s", errUsage, mode, usage)
	}
	// The window is the emulator's: ORCA_PUSH_COALESCE_MS read by config, as
	// the emulator reads it (whose public URL is its own origin).
	cfg, err := config.Load(func(k string) string {
		if k == "ORCA_PUSH_PUBLIC_URL" {
			return "http://127.0.0.1"
		}
		return getenv(k)
	})
	if err != nil {
		return o, err
	}
	fs := flag.NewFlagSet("load "+mode, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.StringVar(&o.gateway, "gateway", "http://127.0.0.1:8080", "the gateway's origin")
	fs.DurationVar(&o.ready, "ready", 10*time.Second, "how long to retry GET /health before giving up")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "the deadline of one request")
	fs.DurationVar(&o.window, "window", cfg.Coalesce, "the emulator's coalescing window (default from ORCA_PUSH_COALESCE_MS)")
	fs.IntVar(&o.hosts, "hosts", 0, "hosts (0: 400, or as many as open's rate and length need; lone: 16)")
	regs, conc, bursts := "1,5", "4,16,64", "1,5,10,20"
	switch mode {
	case "open", "closed":
		fs.StringVar(&regs, "regs", regs, "registrations per request, one measurement each (comma-separated)")
		fs.IntVar(&o.phones, "phones", 0, "registrations per host (0: the largest -regs)")
		fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each measurement lasts (closed: each concurrency)")
		fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "load before each measurement, not measured")
		fs.IntVar(&o.maxInflight, "max-inflight", 2000, "requests in flight at most")
		fs.BoolVar(&o.deliveries, "deliveries", true, "wait for the stand-ins to receive every queued alert and report the deliveries")
	case "lone":
		fs.IntVar(&o.alerts, "alerts", 10, "alerts per host")
	case "burst":
		fs.StringVar(&bursts, "alerts", bursts, "alerts sent together to one phone, one measurement each (comma-separated)")
	}
	if mode == "open" {
		fs.Float64Var(&o.rate, "rate", 0, "requests started per second (required)")
		fs.BoolVar(&o.timeline, "timeline", false, "also report each second of the measurement by the requests due in it, and the provider requests the stand-ins received in it")
		fs.DurationVar(&o.stagger, "stagger", cfg.Coalesce, "spread the hosts' first requests over this long before the warm-up, so that their coalescing windows are out of step as a real fleet's are; 0: every host at once (the default is the emulator's window)")
	}
	if mode == "closed" {
		fs.StringVar(&conc, "concurrency", conc, "workers, one measurement each (comma-separated)")
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	o.gateway = strings.TrimRight(o.gateway, "/")
	if o.regs, err = ints(regs, 1, contract.MaxRegistrationIDs); err != nil {
		return o, fmt.Errorf("%w: -regs: %w", errUsage, err)
	}
	if o.concurrency, err = ints(conc, 1, 10_000); err != nil {
		return o, fmt.Errorf("%w: -concurrency: %w", errUsage, err)
	}
	// A burst stays within one host's alert quota.
	if o.bursts, err = ints(bursts, 1, contract.AlertQuota); err != nil {
		return o, fmt.Errorf("%w: -alerts: %w", errUsage, err)
	}
	o.phones = max(o.phones, slices.Max(o.regs))
	return o, check(mode, &o)
}

// check refuses flags out of range and fills in the number of hosts.
func check(mode string, o *options) error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, a...)...) }
	switch {
	case o.hosts < 0 || o.hosts > 10_000:
		return bad("-hosts must be in 0..10000")
	case o.phones > contract.MaxDevicesPerHost:
		return bad("-phones must be at most %d", contract.MaxDevicesPerHost)
	case mode == "open" && (o.rate <= 0 || o.rate > 100_000):
		return bad("-rate must be in (0, 100000]")
	case mode == "open" && o.rate*o.duration.Seconds() < 1:
		return bad("-rate × -duration must make at least one request")
	case mode != "lone" && mode != "burst" && (o.duration <= 0 || o.warmup < 0 || o.stagger < 0 || o.maxInflight < 1):
		return bad("-duration must be positive, -warmup and -stagger not negative, -max-inflight at least 1")
	case mode == "lone" && (o.alerts < 1 || o.alerts > 1000):
		return bad("-alerts must be in 1..1000")
	}
	switch need := hostsFor(o.rate, o.rate*(o.stagger+o.warmup+o.duration).Seconds()*float64(len(o.regs))); {
	case o.hosts == 0 && mode == "lone":
		o.hosts = 16
	case o.hosts == 0 && mode == "closed":
		o.hosts = defaultHosts
	case o.hosts == 0:
		o.hosts = max(defaultHosts, need)
	case mode == "open" && o.hosts < need:
		return bad("-hosts %d: this rate and length need at least %d hosts to stay within their quota and bucket", o.hosts, need)
	}
	return nil
}

// ints parses a comma-separated list of integers in lo..hi.
func ints(s string, lo, hi int) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%q: want integers in %d..%d", s, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

// waitReady retries GET /health until it answers 200 or d has passed.
// Polling is the way across a process boundary: the gateway may still be
// starting.
func (t *target) waitReady(ctx context.Context, d time.Duration) error {
	deadline := t.clock.Now().Add(d)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.gateway+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := t.plain.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /health answered %d", resp.StatusCode)
		}
		if !t.clock.Now().Before(deadline) {
			return fmt.Errorf("gateway at %s not ready after %v: %w", t.gateway, d, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep waits d in real time, or until ctx ends: the tool runs against a
// gateway on the real clock.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
