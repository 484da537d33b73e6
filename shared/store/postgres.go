package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"time"

	"cloud.google.com/go/cloudsqlconn"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

type postgresDialect struct{}

// Session settings (reference-behaviour §8.3): no statement or lock wait can
// hold a request hostage, and an abandoned transaction is cut off.
var postgresRuntimeParams = map[string]string{
	"statement_timeout":                   "5000",
	"lock_timeout":                        "2000",
	"idle_in_transaction_session_timeout": "5000",
}

// openPostgres opens a pgx pool: through the Cloud SQL connector when an
// instance is named (go-dependencies.md §2f), else straight to the URL.
func openPostgres(ctx context.Context, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(o.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("open postgres: parse url: %w", err)
	}
	if o.PoolMax > 0 {
		cfg.MaxConns = int32(o.PoolMax)
	}
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	for k, v := range postgresRuntimeParams {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	closeDialer := func() error { return nil }
	if o.CloudSQLInstance != "" {
		// Lazy refresh: Cloud Run throttles the CPU outside requests, which
		// starves a background refresh. Built-in metrics are off because
		// they need a role the runtime account does not have (pitfall 8).
		d, err := cloudsqlconn.NewDialer(ctx,
			cloudsqlconn.WithLazyRefresh(),
			cloudsqlconn.WithIAMAuthN(),
			cloudsqlconn.WithDefaultDialOptions(cloudsqlconn.WithPrivateIP()),
			cloudsqlconn.WithBuiltInMetrics(false))
		if err != nil {
			return nil, fmt.Errorf("open postgres: cloud sql dialer: %w", err)
		}
		instance := o.CloudSQLInstance
		cfg.ConnConfig.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.Dial(ctx, instance)
		}
		closeDialer = d.Close
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		closeDialer()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	return &Store{db: db, dialect: postgresDialect{}, close: func() error {
		err := db.Close()
		pool.Close()
		return errors.Join(err, closeDialer())
	}}, nil
}

func (postgresDialect) name() string { return "postgres" }

// lockHost takes a transaction-scoped advisory lock on the host's key.
func (postgresDialect) lockHost(ctx context.Context, tx *sql.Tx, host string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "orca-push:host:"+host)
	return err
}

// retryable matches SQLSTATE 40001 (serialization failure), 40P01
// (deadlock) and 55P03 (lock not available), by code, never by text.
func (postgresDialect) retryable(err error) bool {
	var e *pgconn.PgError
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case "40001", "40P01", "55P03":
		return true
	}
	return false
}

// migrationLockKey is the session advisory lock that serialises migration
// runs of every gateway instance and of scripts/migrate.
const migrationLockKey = 0x6f726361707368 // "orcapsh"

func (postgresDialect) lockMigrations(ctx context.Context, conn *sql.Conn) (func(), error) {
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLockKey)); err != nil {
		return nil, err
	}
	return func() {
		// The unlock must run even when ctx has ended.
		conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLockKey))
	}, nil
}
