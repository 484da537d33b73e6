// Package storetest opens real databases for tests: SQLite in a file under
// t.TempDir() and PostgreSQL in a fresh schema per test, so runs never
// collide. It must only be imported by tests.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"onorca.dev/push/shared/store"
)

// DefaultPostgresURL is the local server the tests use unless
// ORCA_PUSH_TEST_DATABASE_URL says otherwise.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Dialect is one database the tests run against.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Options opens a fresh, empty database of this dialect for t and drops
	// it when t ends. Each call gives another database.
	Options func(t testing.TB) store.Options
}

// Dialects returns SQLite and PostgreSQL. PostgreSQL is mandatory: a test
// fails when it cannot be reached, unless ORCA_PUSH_TEST_SKIP_POSTGRES=1.
func Dialects(t testing.TB) []Dialect {
	t.Helper()
	ds := []Dialect{{Name: "sqlite", Options: func(t testing.TB) store.Options {
		return store.Options{DataDir: t.TempDir()}
	}}}
	if os.Getenv("ORCA_PUSH_TEST_SKIP_POSTGRES") == "1" {
		return ds
	}
	return append(ds, Dialect{Name: "postgres", Options: PostgresOptions})
}

// Postgres returns the PostgreSQL dialect for a test that needs it (a
// table lock, a database two processes share), skipping t when
// ORCA_PUSH_TEST_SKIP_POSTGRES=1.
func Postgres(t testing.TB) Dialect {
	t.Helper()
	if os.Getenv("ORCA_PUSH_TEST_SKIP_POSTGRES") == "1" {
		t.Skip("needs PostgreSQL (ORCA_PUSH_TEST_SKIP_POSTGRES=1)")
	}
	return Dialect{Name: "postgres", Options: PostgresOptions}
}

// PostgresURL returns the base URL of the test server.
func PostgresURL() string {
	if u := os.Getenv("ORCA_PUSH_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

// PostgresOptions creates a schema of its own for t and returns options whose
// URL uses it as search_path.
func PostgresOptions(t testing.TB) store.Options {
	t.Helper()
	base := PostgresURL()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	var b [6]byte
	rand.Read(b[:])
	schema := "orcapush_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("postgres at %s is needed by the tests (set ORCA_PUSH_TEST_DATABASE_URL): %v", redact(base), err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("postgres url: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return store.Options{DatabaseURL: u.String(), PoolMax: 20}
}

// Open opens a fresh store of dialect d for t, closed when t ends.
func Open(t testing.TB, d Dialect) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), d.Options(t))
	if err != nil {
		t.Fatalf("open %s store: %v", d.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// OpenCounting opens a store as [Open] does on PostgreSQL, through the
// proxy of [CountingPostgres], and returns it with its options and the
// proxy's counts; t is skipped when PostgreSQL is.
func OpenCounting(t testing.TB) (*store.Store, store.Options, *RoundTrips) {
	t.Helper()
	opts, rt := CountingPostgres(t)
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open postgres store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, opts, rt
}

func redact(u string) string {
	if i := strings.Index(u, "@"); i >= 0 {
		if j := strings.Index(u, "://"); j >= 0 && j < i {
			return u[:j+3] + "…" + u[i:]
		}
	}
	return u
}

// SQL opens the database opts names with database/sql, beside the store, for
// a benchmark's floor that must run bare statements; it is closed when t
// ends.
func SQL(t testing.TB, opts store.Options) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", opts.DatabaseURL
	if dsn == "" {
		driver, dsn = "sqlite", "file:"+filepath.Join(opts.DataDir, store.SQLiteFile)+"?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// LockTable takes an ACCESS EXCLUSIVE lock on table of the PostgreSQL
// database opts names, on a connection of its own, so that the gateway's
// statements on it wait as behind a busy writer. The returned release ends
// the lock; it may be called more than once, and runs when t ends.
func LockTable(t testing.TB, opts store.Options, table string) (release func()) {
	t.Helper()
	tx, err := SQL(t, opts).Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	if _, err := tx.Exec("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback() }
}

// PlanConn opens a connection to the PostgreSQL database opts names,
// closed when t ends, on which every prepared statement runs on its generic
// plan, as a long-lived connection's soon does: the connection Plan reads
// plans on.
func PlanConn(t testing.TB, opts store.Options) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := SQL(t, opts).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	return conn
}

// Plan prepares query as name on conn, a PostgreSQL connection, and returns
// the plan EXPLAIN gives for it with args, the parameters' literals ("" for
// a statement without any): the generic plan once conn has plan_cache_mode
// force_generic_plan, whatever the literals.
func Plan(t testing.TB, conn *sql.Conn, name, query, args string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+query); err != nil {
		t.Fatalf("prepare: %v\n%s", err, query)
	}
	run := `EXPLAIN EXECUTE ` + name
	if args != "" {
		run += `(` + args + `)`
	}
	rows, err := conn.QueryContext(ctx, run)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, query)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}
