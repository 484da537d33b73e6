package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/service"
)

// run parses args, starts the emulator and serves until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(stdout)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	manual := fs.Bool("manual-clock", false, "start with a frozen clock moved only by POST /_emulator/clock (or ORCA_PUSH_MANUAL_CLOCK=1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer lis.Close()
	origin := "http://" + lis.Addr().String()
	env := func(k string) string {
		if k == "ORCA_PUSH_PUBLIC_URL" && getenv(k) == "" {
			return origin
		}
		return getenv(k)
	}
	cfg, err := config.Load(env)
	if err != nil {
		return err
	}
	var clk clock.Clock = clock.Real{}
	var manualClock *clock.Manual
	if *manual || cfg.ManualClock {
		// The manual clock starts at the real time and then only moves when
		// told to.
		manualClock = clock.NewManual(clock.Real{}.Now())
		clk = manualClock
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	em, err := newEmulator(ctx, cfg, clk, manualClock, origin, log)
	if err != nil {
		return err
	}
	defer em.close()
	svc := em.svc
	mux := em.mux()

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	go svc.Counters.Run(ctx, time.Minute)
	if manualClock == nil {
		go em.sweepEveryMinute(ctx)
	}
	fmt.Fprintf(stdout, "orca-push emulator ready on %s (%s, %s clock)\n", origin, svc.Store.Dialect(), clockName(manualClock))

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
	return nil
}

func clockName(m *clock.Manual) string {
	if m != nil {
		return "manual"
	}
	return "real"
}

// emulator is the whole local gateway: the service, what stands in for
// Google and Apple, and the control API.
type emulator struct {
	*control
}

// newEmulator builds the emulator for the given configuration and clock
// (manualClock is nil with the real clock).
func newEmulator(ctx context.Context, cfg config.Config, clk clock.Clock, manualClock *clock.Manual, origin string, log *slog.Logger) (*emulator, error) {
	local, err := startLocal(ctx, clk, manualClock != nil, cfg, origin)
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
		Scheduler: local.scheduler, APNS: local.apns, FCM: local.fcm,
	})
	if err != nil {
		st.Close()
		local.close()
		return nil, err
	}
	return &emulator{&control{svc: svc, clock: manualClock, local: local}}, nil
}

func (e *emulator) close() {
	e.local.close()
	e.svc.Close()
}
