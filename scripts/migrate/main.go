// Command migrate applies the embedded migrations to the database the
// gateway's environment names (ORCA_PUSH_DATABASE_URL, through the Cloud SQL
// connector when ORCA_PUSH_CLOUDSQL_INSTANCE is set; SQLite under
// ORCA_PUSH_DATA_DIR otherwise). It is idempotent, and concurrent runs (two
// rollouts, or a rollout and a starting instance) are serialised by the
// store's migration lock. The deploy workflow runs it inside the rollout lease.
//
//	go run ./scripts/migrate
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "migrate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	// Only the database settings matter here; the public URL is required by
	// the gateway's configuration, so default it.
	cfg, err := config.Load(func(k string) string {
		if k == "ORCA_PUSH_PUBLIC_URL" && getenv(k) == "" {
			return contract.DefaultGatewayURL
		}
		return getenv(k)
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	s, err := store.Open(ctx, store.Options{
		DatabaseURL: cfg.DatabaseURL, CloudSQLInstance: cfg.CloudSQLInstance, DataDir: cfg.DataDir, PoolMax: 2,
	})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrate: %s schema is current\n", s.Dialect())
	return nil
}
