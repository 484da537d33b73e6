package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"onorca.dev/push/functions/routes"
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
		manualClock = clock.NewManual(time.Now())
		clk = manualClock
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := service.New(ctx, service.Options{Config: cfg, Clock: clk, Log: log})
	if err != nil {
		return err
	}
	defer svc.Close()

	mux := routes.Public(svc)
	control := &control{clock: manualClock}
	control.install(mux)

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	go svc.Counters.Run(ctx, time.Minute)
	fmt.Fprintf(stdout, "orca-push emulator ready on %s (%s, %s clock)\n", origin, svc.Store.Dialect(), clockName(manualClock))

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Drain as a deployed function does: refuse new requests, let running
	// ones finish.
	sctx, cancel := context.WithTimeout(context.Background(), 9*time.Second)
	defer cancel()
	svc.Edge.Drain(sctx)
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
