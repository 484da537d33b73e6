package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"cloud.google.com/go/cloudsqlconn"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// postgresDialect runs transactions on pool connections through a
// [pipeline].
type postgresDialect struct {
	pool *pgxpool.Pool
	// slots, when set, holds the connections of the combiners' slots
	// (slotPoolSize of them, taken from the pool's), whose session waits
	// slotWait for a lock: a transaction in a slot then runs on one of them
	// and its lock statement sets no lock_timeout of its own, which cost
	// PostgreSQL some 12,000 instructions a transaction: 6,500 in the lock
	// statement (the setting parsed and stacked) and the rest undoing it at
	// the commit (scripts/pgcount -mode window -split).
	// Nil when the pool is too small to spare them: a slot's transaction
	// then sets its wait as any other does (lockStatements).
	slots    *pgxpool.Pool
	slotWait string
}

// poolFor returns the pool a transaction that waits at most wait for its
// locks runs on, and the wait its lock statement must still set: none on
// the slot pool when wait is its sessions' own.
func (d postgresDialect) poolFor(wait string) (*pgxpool.Pool, string) {
	if d.slots != nil && wait == d.slotWait {
		return d.slots, ""
	}
	return d.pool, wait
}

// combinerSlots is the most slots of each combiner of a store: its sends',
// claims' and outcomes' (openPostgres).
var combinerSlots = [3]int{sendSlots, deliverySlots, deliverySlots}

// slotPoolSize is how many of a pool of poolMax connections the
// combiners' slots take as a pool of their own: as many as they hold at
// most, when that leaves at least as many to the rest of the work; else
// none.
func slotPoolSize(poolMax int) int {
	n := 0
	for _, most := range combinerSlots {
		n += slotCount(poolMax, most)
	}
	if poolMax < 2*n {
		return 0
	}
	return n
}

// idleInTransaction is how long a session may wait for its client inside
// a transaction (reference-behaviour §8.3, 5 s): the server's idle timer
// where it sent a ReadyForQuery, the sweep's cut-off where a pipeline's
// Flush left it waiting without one (Store.CutOffSilent).
const idleInTransaction = 5 * time.Second

// Session settings (reference-behaviour §8.3): no statement or lock wait can
// hold a request hostage, and an abandoned transaction is cut off (between
// the round trips of a pipeline's transaction, which sends no
// ReadyForQuery and so starts no idle timer, by the sweep:
// Store.CutOffSilent). The application name marks the gateway's sessions
// for that cut-off.
var postgresRuntimeParams = map[string]string{
	"statement_timeout":                   "5000",
	"lock_timeout":                        strconv.FormatInt(lockWait.Milliseconds(), 10),
	"idle_in_transaction_session_timeout": strconv.FormatInt(idleInTransaction.Milliseconds(), 10),
	"application_name":                    "orca-push",
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
	poolMax := int(cfg.MaxConns)
	d := postgresDialect{slotWait: lockTimeout(slotLockWait)}
	var slotsCfg *pgxpool.Config
	if n := slotPoolSize(poolMax); n > 0 {
		slotsCfg = cfg.Copy()
		slotsCfg.MaxConns = int32(n)
		slotsCfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(slotLockWait.Milliseconds(), 10)
		cfg.MaxConns = int32(poolMax - n)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		closeDialer()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	d.pool = pool
	if slotsCfg != nil {
		if d.slots, err = pgxpool.NewWithConfig(ctx, slotsCfg); err != nil {
			pool.Close()
			closeDialer()
			return nil, fmt.Errorf("open postgres: %w", err)
		}
	}
	db := stdlib.OpenDBFromPool(pool)
	s := &Store{db: db, dialect: d}
	s.groups = newCombiner(d, poolMax, combinerSlots[0], &s.observe)
	s.claims = newCombiner(d, poolMax, combinerSlots[1], &s.observe)
	s.outcomes = newCombiner(d, poolMax, combinerSlots[2], &s.observe)
	s.close = func() error {
		err := db.Close()
		pool.Close()
		if d.slots != nil {
			d.slots.Close()
		}
		return errors.Join(err, closeDialer())
	}
	return s, nil
}

func (postgresDialect) name() string { return "postgres" }

// lockStatements take a transaction-scoped advisory lock on the key of the
// host on names, given or read from its batch; none when on is empty. When
// on.wait is set, the statement sets the transaction's lock_timeout to it
// before it waits: set_config(…, true) in the WHERE clause, which the
// server evaluates for a row before that row's lock call, costs no
// statement of its own and holds until the transaction ends (the host
// lock's WHERE true is there for that condition to follow).
func lockStatements(on lockOn) []statement {
	var s statement
	switch {
	case on.host != "":
		s = statement{op: "lock host", query: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0)) WHERE true`,
			args: []any{hostLockPrefix + on.host}}
	case on.batch != "":
		s = statement{op: "lock batch host", query: `SELECT pg_advisory_xact_lock(hashtextextended($1 || host_fingerprint, 0))
			FROM push_delivery_batches WHERE batch_id = $2`, args: []any{hostLockPrefix, on.batch}}
	default:
		return nil
	}
	if on.wait != "" {
		s.query += ` AND set_config('lock_timeout', $` + strconv.Itoa(len(s.args)+1) + `, true) IS NOT NULL`
		s.args = append(s.args, on.wait)
	}
	return []statement{s}
}

// hostLockPrefix namespaces the host locks' keys.
const hostLockPrefix = "orca-push:host:"

// transact runs fn on a pool connection in a pipelined transaction: the
// host lock goes with fn's first statement, fn's later writes with the
// commit, and no BEGIN or COMMIT is sent (pipeline). A failure rolls the
// transaction back; a connection that fails meanwhile is destroyed by the
// pool, so no failure leaves a transaction open.
func (d postgresDialect) transact(ctx context.Context, on lockOn, fn func(*Tx) error) (err error) {
	pool, wait := d.poolFor(on.wait)
	on.wait = wait
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer conn.Release()
	p := newPipeline(ctx, conn.Conn(), lockStatements(on)...)
	defer func() {
		if r := recover(); r != nil {
			p.rollback()
			panic(r)
		}
		if err != nil {
			p.rollback()
		}
	}()
	if err := fn(&Tx{r: p}); err != nil {
		return err
	}
	return p.commit(ctx)
}

// retryable matches SQLSTATE 40001 (serialization failure) and 40P01
// (deadlock), by code, never by text. A lock wait that ran out (55P03) is not
// retried: the lock was held for lockWait already, and a second wait would
// hold the request three times as long before [Classify] answers busy.
func (postgresDialect) retryable(err error) bool {
	var e *pgconn.PgError
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case "40001", "40P01":
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
