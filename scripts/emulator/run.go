package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/service"
)

// run parses args, starts the emulator and serves until ctx ends. For -h it
// prints the help on stdout and returns flag.ErrHelp; bad flags are a
// [usageError]. Structured logs (the counters) go to stdout with the ready
// line; the reason of each refused request goes to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	addr, err := listenAddr(o.addr, getenv)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer lis.Close()
	origin := localOrigin(lis.Addr())
	if !loopback(lis.Addr()) {
		// The control API and the console's demo host have no
		// authentication: fine on this machine, not on a network.
		fmt.Fprintf(stderr, "emulator: listening on %s, reachable from other machines: anyone who can reach it "+
			"can use the control API under /_emulator and act as the console's demo host; "+
			"-addr 127.0.0.1:PORT keeps it on this machine\n", lis.Addr())
	}
	cfg, err := config.Load(withPublicURL(getenv, origin))
	if err != nil {
		return err
	}
	var clk clock.Clock = clock.Real{}
	var manualClock *clock.Manual
	if o.manual || cfg.ManualClock {
		// The manual clock starts at the real time and then only moves when
		// told to. Hosts on the real clock still sign in at any emulator
		// time: the host command line reads GET /_emulator/clock when a
		// challenge's times look wrong, and the console's demo host reads
		// this clock itself.
		manualClock = clock.NewManual(clock.Real{}.Now())
		clk = manualClock
	}
	// Cloud Logging's JSON, as deployed: INFO, the counters, when one
	// changed; ERROR, a request that failed.
	log := obs.NewLogger(stdout)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	em, err := newEmulator(ctx, cfg, clk, manualClock, origin, log, (&refusals{w: stderr}).print, o.queues)
	if err != nil {
		return err
	}
	defer em.close()
	svc := em.svc

	srv := &http.Server{Handler: em.mux(), ReadHeaderTimeout: min(maxHeaderTimeout, o.readTimeout),
		ReadTimeout: o.readTimeout, WriteTimeout: o.writeTimeout, IdleTimeout: o.idleTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	go svc.Counters.Run(ctx, time.Minute)
	if manualClock == nil {
		go em.sweepEveryMinute(ctx)
	}
	fmt.Fprintf(stdout, "orca-push emulator ready on %s (%s, %s clock); console %s%s\n",
		origin, svc.Store.Dialect(), clockName(manualClock), origin, consolePath)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Shut down as a deployed function does: dispatch nothing more, refuse
	// new requests, let running ones finish (a delivery still waiting for
	// its provider near the end records a retry), then stop serving.
	em.local.tasks.Pause()
	sctx, scancel := context.WithTimeout(context.Background(), service.ShutdownGrace)
	defer scancel()
	svc.Shutdown(sctx)
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// What changed since the last minute's line, before the process exits.
	svc.Counters.Flush()
	return nil
}

// listenAddr returns -addr, or 127.0.0.1 on PORT (default 8080) when -addr
// is not given.
func listenAddr(addr string, getenv func(string) string) (string, error) {
	if addr != "" {
		return addr, nil
	}
	// The public URL is not known before listening; any valid one lets the
	// configuration be read for PORT (and fail early on other variables).
	cfg, err := config.Load(withPublicURL(getenv, contract.DefaultGatewayURL))
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)), nil
}

// localOrigin is the origin a local client reaches a listener at: its
// address, with an unspecified host (":8080", "0.0.0.0:8080") read as
// 127.0.0.1, so that it is a canonical origin the configuration accepts.
func localOrigin(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// loopback reports whether a listener at a is reachable from this machine
// only.
func loopback(a net.Addr) bool {
	host, _, _ := net.SplitHostPort(a.String())
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// withPublicURL returns getenv with ORCA_PUSH_PUBLIC_URL defaulting to
// origin.
func withPublicURL(getenv func(string) string, origin string) func(string) string {
	return func(k string) string {
		if k == "ORCA_PUSH_PUBLIC_URL" && getenv(k) == "" {
			return origin
		}
		return getenv(k)
	}
}

func clockName(m *clock.Manual) string {
	if m != nil {
		return "manual"
	}
	return "real"
}

// refusals prints one line per request refused with 400 on w: the route and
// the decoder's reason, which names the field and the rule and never holds
// a value (contract.InvalidError).
type refusals struct {
	// mu keeps concurrent lines whole.
	mu sync.Mutex
	w  io.Writer
}

func (r *refusals) print(route, reason string) {
	if reason == "" {
		reason = "the request is invalid"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "emulator: refused %s with 400 invalid_request: %s\n", route, reason)
}

// emulator is the whole local gateway: the service, what stands in for
// Google and Apple, and the control API.
type emulator struct {
	*control
}

// newEmulator builds the emulator for the given configuration and clock
// (manualClock is nil with the real clock). origin is where the emulator's
// own routes are reached; rejected, when not nil, is told why each 400 was
// answered; q shapes the Cloud Tasks queues (zero: one queue, no rate).
func newEmulator(ctx context.Context, cfg config.Config, clk clock.Clock, manualClock *clock.Manual, origin string,
	log *slog.Logger, rejected func(route, reason string), q queueOptions) (*emulator, error) {
	if err := emulatorKeys(&cfg, rand.Reader); err != nil {
		return nil, err
	}
	local, err := startLocal(ctx, clk, manualClock != nil, cfg, origin, q)
	if err != nil {
		return nil, err
	}
	st, err := service.OpenStore(ctx, cfg)
	if err != nil {
		local.close()
		return nil, err
	}
	svc, err := service.New(service.Options{
		Config: cfg, Clock: clk, Log: log, Store: st, Rand: rand.Reader,
		Scheduler: local.scheduler, APNS: local.apns, FCM: local.fcm, Rejected: rejected,
	})
	if err != nil {
		st.Close()
		local.close()
		return nil, err
	}
	demo, err := newDemoHost(origin, cfg.PublicURL, clk)
	if err != nil {
		svc.Close()
		local.close()
		return nil, err
	}
	return &emulator{&control{svc: svc, clock: manualClock, local: local, demo: demo}}, nil
}

func (e *emulator) close() {
	e.local.close()
	e.svc.Close()
}
