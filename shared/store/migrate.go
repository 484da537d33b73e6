package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// migrationFiles holds the versioned migrations, NNNN_name.sql, applied in
// order, each once.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version    int64
	name       string
	statements []string
	// postgresOnly marks a migration whose file begins with the line
	// "-- postgres only": SQLite records its version and runs none of it
	// (a storage setting SQLite has no form of).
	postgresOnly bool
}

// postgresOnlyMark is the first line of a migration only PostgreSQL runs.
const postgresOnlyMark = "-- postgres only\n"

// migrations parses the embedded files once.
var migrations = sync.OnceValue(func() []migration {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	slices.Sort(names)
	out := make([]migration, 0, len(names))
	for _, n := range names {
		base := path.Base(n)
		v, err := strconv.ParseInt(strings.SplitN(base, "_", 2)[0], 10, 64)
		if err != nil {
			panic(fmt.Sprintf("store: migration %s has no version", base))
		}
		text, err := migrationFiles.ReadFile(n)
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: base, statements: splitStatements(string(text)),
			postgresOnly: strings.HasPrefix(string(text), postgresOnlyMark)})
	}
	return out
})

func latestVersion() int64 {
	m := migrations()
	if len(m) == 0 {
		return 0
	}
	return m[len(m)-1].version
}

// splitStatements drops -- comments and splits on semicolons outside a
// $$-quoted body (a function's); the migration files hold no semicolon
// inside a literal, and no "--" or "$$" inside either.
func splitStatements(text string) []string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	var out []string
	var stmt strings.Builder
	for i, part := range strings.Split(b.String(), "$$") {
		if i%2 == 1 { // inside $$ … $$: kept whole, quotes and all
			stmt.WriteString("$$" + part + "$$")
			continue
		}
		pieces := strings.Split(part, ";")
		for j, p := range pieces {
			stmt.WriteString(p)
			if j == len(pieces)-1 {
				break
			}
			if s := strings.TrimSpace(stmt.String()); s != "" {
				out = append(out, s)
			}
			stmt.Reset()
		}
	}
	if s := strings.TrimSpace(stmt.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// migrate applies pending migrations; Open calls it. Concurrent runs (two
// instances starting together, or scripts/migrate during a deploy) are
// serialised by an advisory lock on PostgreSQL and by an immediate
// transaction on SQLite, and each migration commits with its version row.
func (s *Store) migrate(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := s.migrateOnce(ctx)
		if err == nil || attempt == migrateAttempts || !s.dialect.retryable(err) && !errors.Is(Classify(err), ErrBusy) {
			return err
		}
		// A new SQLite file answers SQLITE_BUSY, without waiting, to a
		// connection that opens while another one switches it to WAL; and
		// another process's migration may hold the write lock past the
		// lock wait a request gets. A start may wait longer than a request:
		// busy is retried here, where requests answer 503 at once.
		t := time.NewTimer(time.Duration(attempt) * 20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// migrateAttempts bounds how often migrate runs when the database is busy.
const migrateAttempts = 5

func (s *Store) migrateOnce(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	unlock, err := s.dialect.lockMigrations(ctx, conn)
	if err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer unlock()
	for _, m := range migrations() {
		if err := s.applyMigration(ctx, conn, m); err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
	}
	return nil
}

func (s *Store) applyMigration(ctx context.Context, conn *sql.Conn, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS push_schema_migrations (
		version BIGINT PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM push_schema_migrations WHERE version = $1`, m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, pg := s.dialect.(postgresDialect); pg || !m.postgresOnly {
		for _, stmt := range m.statements {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO push_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
		return err
	}
	return tx.Commit()
}
