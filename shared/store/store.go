// Package store is the gateway's SQL storage: one Store over PostgreSQL (pgx,
// optionally through the Cloud SQL connector) or embedded SQLite (modernc),
// with embedded versioned migrations, per-host transaction locks and retry of
// serialization failures. It is the only package that holds SQL. Times are
// epoch milliseconds passed in by the caller; SQL never reads a clock.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"onorca.dev/push/shared/contract"
)

// Options says which database to open.
type Options struct {
	// DatabaseURL is a PostgreSQL URL or keyword string; empty means SQLite.
	DatabaseURL string
	// CloudSQLInstance, when set, dials PostgreSQL through the Cloud SQL
	// connector (lazy refresh, IAM authentication, private IP).
	CloudSQLInstance string
	// DataDir holds the SQLite file when DatabaseURL is empty.
	DataDir string
	// PoolMax bounds the PostgreSQL pool.
	PoolMax int
}

// Store is the gateway's database. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	dialect dialect
	close   func() error
	// groups, claims and outcomes share transactions among the calls of
	// SharedHostTx, ClaimBatch and EndLeasedBatch on PostgreSQL; nil on
	// SQLite.
	groups, claims, outcomes *combiner
	// observe is ObserveGroups' function.
	observe atomic.Pointer[func(members int, failed bool)]
	// plainBefore is the sealing cut-off migration 0007 stamped, read
	// once at Open: see PlainMembers.
	plainBefore int64
}

// dialect holds what differs between the two databases.
type dialect interface {
	// name is "postgres" or "sqlite".
	name() string
	// transact runs fn in one transaction, under the per-host lock that
	// on names, and commits it.
	transact(ctx context.Context, on lockOn, fn func(*Tx) error) error
	// retryable reports whether err is a serialization failure, a deadlock
	// or a busy database, after which the transaction may run again.
	retryable(err error) bool
	// claim is [Store.ClaimBatch]'s work inside its transaction.
	claim(ctx context.Context, t *Tx, a claimArgs) (Claim, error)
	// lockMigrations serialises migration runs across processes on conn
	// and returns the unlock.
	lockMigrations(ctx context.Context, conn *sql.Conn) (func(), error)
}

// Open opens the database named by o and applies any pending migrations.
func Open(ctx context.Context, o Options) (*Store, error) {
	var (
		s   *Store
		err error
	)
	if o.DatabaseURL == "" {
		s, err = openSQLite(o.DataDir)
	} else {
		s, err = openPostgres(ctx, o)
	}
	if err != nil {
		return nil, dataDirError(o, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, dataDirError(o, err)
	}
	// MIN: rows added to the cut-off's table never widen it.
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MIN(plain_before), 0) FROM push_seal_cutoff`).
		Scan(&s.plainBefore); err != nil {
		s.Close()
		return nil, dataDirError(o, fmt.Errorf("read the sealing cut-off: %w", err))
	}
	return s, nil
}

// PlainMembers reports whether a batch created at createdAt may hold members
// stored in the clear, read at now: members as the gateway stored them
// before sealing, which no key binds to their row. Only batches stored
// before migration 0007 may (the cut-off it stamped, read at Open), and only
// for contract.EventLifetime after the cut-off: an event's deadline is at
// most that long after its acceptance, so by then every batch stored before
// it has ended, and no edit of a batch row (its creation time, its deadline)
// makes a member in the clear readable again.
func (s *Store) PlainMembers(createdAt, now int64) bool {
	return createdAt < s.plainBefore && now < s.plainBefore+contract.EventLifetime.Milliseconds()
}

// dataDirError names the SQLite data directory in err, so that a directory
// that cannot be created or written explains itself; PostgreSQL errors pass
// unchanged.
func dataDirError(o Options, err error) error {
	if o.DatabaseURL != "" {
		return err
	}
	return fmt.Errorf("sqlite data directory %q: %w", o.DataDir, err)
}

// Dialect returns "postgres" or "sqlite".
func (s *Store) Dialect() string { return s.dialect.name() }

// Close closes the database.
func (s *Store) Close() error { return s.close() }

// maxAttempts bounds how often a transaction runs when it keeps meeting
// serialization failures or deadlocks (reference-behaviour §8.3: 3 attempts).
const maxAttempts = 3

// Tx runs fn in a transaction and commits it. fn may run more than once when
// the database reports a serialization failure, a deadlock or a busy lock, so
// it must only touch the database through tx. A panic in fn rolls back and
// re-panics.
func (s *Store) Tx(ctx context.Context, fn func(*Tx) error) error {
	return s.transact(ctx, lockOn{}, fn)
}

// HostTx is [Store.Tx] under the per-host lock: an advisory transaction lock
// on PostgreSQL, taken in the round trip of fn's first statement, an
// immediate transaction on SQLite. Everything that counts or orders a host's
// rows (quota, the device cap, sessions) runs under it.
func (s *Store) HostTx(ctx context.Context, host string, fn func(*Tx) error) error {
	return s.transact(ctx, lockOn{host: host}, fn)
}

// SharedHostTx is [Store.HostTx] for a transaction that may share one
// PostgreSQL transaction with other hosts' SharedHostTx calls (group
// commit): when as many transactions are in flight as the pool's quarter,
// calls wait and go together in the next, each under its own host's lock,
// their round trips pipelined together and one commit for all. A lone call
// never waits. fn runs in another goroutine then, and must only touch the
// database through tx and read nothing of another host's; a failure of any
// member rolls the group back and each member runs again alone, so fn may
// run more than once and its error is the one it returns alone. On SQLite
// it is HostTx.
func (s *Store) SharedHostTx(ctx context.Context, host string, fn func(*Tx) error) error {
	alone := func(wait string) error { return s.transact(ctx, lockOn{host: host, wait: wait}, fn) }
	if s.groups == nil {
		return alone("")
	}
	return s.groups.do(&groupCall{ctx: ctx, on: lockOn{host: host}, fn: fn, alone: alone})
}

// ObserveGroups makes the store call f after each transaction that calls of
// SharedHostTx, ClaimBatch or EndLeasedBatch shared, with how many calls it
// held and whether it failed (each then ran again alone): the aggregate
// counters of group commit. f must be quick and safe for concurrent use.
func (s *Store) ObserveGroups(f func(members int, failed bool)) {
	s.observe.Store(&f)
}

// SharedWaiting returns how many calls of SharedHostTx, ClaimBatch and
// EndLeasedBatch wait for a group: a test lines calls up with it.
func (s *Store) SharedWaiting() int {
	n := 0
	for _, c := range []*combiner{s.groups, s.claims, s.outcomes} {
		if c != nil {
			c.mu.Lock()
			n += len(c.waiting)
			c.mu.Unlock()
		}
	}
	return n
}

// lockOn names the per-host lock a transaction takes: the host's, the host
// of a batch's, or none when both are empty. wait, when set, is the
// lock_timeout for that lock and any after it in the transaction instead of
// the session's lockWait: a transaction in a combiner's slot waits
// slotLockWait, on PostgreSQL as the session of its slot pool's connection
// (postgresDialect.slots) when there is one.
type lockOn struct {
	host, batch string
	wait        string
}

func (s *Store) transact(ctx context.Context, on lockOn, fn func(*Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.dialect.transact(ctx, on, fn)
		if err == nil || attempt == maxAttempts || !s.dialect.retryable(err) {
			break
		}
		// A short random pause spreads colliding retries (§8.3: 0–25 ms).
		t := time.NewTimer(time.Duration(rand.IntN(25)+1) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return err
}

// Tx is an open transaction. Its methods are the store's query vocabulary.
type Tx struct {
	r runner
}

// pipelined reports whether each statement of t costs a round trip that
// statements can share: on PostgreSQL, alone or in a group.
func (t *Tx) pipelined() bool {
	switch t.r.(type) {
	case *pipeline, *member:
		return true
	}
	return false
}

func (t *Tx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	return t.r.exec(ctx, query, args...)
}

// later runs a write whose outcome the transaction does not read. On
// PostgreSQL it travels with the next statement or with the commit, saving a
// round trip; its error, named op, surfaces there or at commit.
func (t *Tx) later(ctx context.Context, op, query string, args ...any) error {
	return t.r.later(ctx, op, query, args...)
}

// Ping checks that the database answers and that its schema is the one this
// binary expects; /ready uses it.
func (s *Store) Ping(ctx context.Context) error {
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM push_schema_migrations`).Scan(&v)
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if want := latestVersion(); v != want {
		return fmt.Errorf("ping: schema version %d, want %d", v, want)
	}
	return nil
}
