package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteFile is the database file's name under the data directory.
const SQLiteFile = "orca-push.sqlite"

// sqliteDialect runs transactions through database/sql.
type sqliteDialect struct {
	db *sql.DB
	// writers serialises write transactions inside this process, so they
	// queue here instead of spinning in SQLite's busy handler.
	writers chan struct{}
}

// openSQLite opens (creating) <dir>/orca-push.sqlite in WAL mode. Every
// transaction begins IMMEDIATE (go-dependencies.md pitfall 10: a deferred
// transaction that later writes can fail with SQLITE_BUSY that busy_timeout
// does not cover).
func openSQLite(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// busy_timeout is lockWait: another process's writer (scripts/migrate,
	// a second emulator on the same directory, the sqlite3 shell) is waited
	// for as long as PostgreSQL waits for a host lock, and then the
	// request is 503 busy (issue 26 §4: 10 s, three times over).
	dsn := "file:" + filepath.Join(dir, SQLiteFile) +
		"?_pragma=busy_timeout(" + strconv.FormatInt(lockWait.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	db.SetMaxOpenConns(8)
	return &Store{db: db, dialect: sqliteDialect{db: db, writers: make(chan struct{}, 1)}, close: db.Close}, nil
}

func (sqliteDialect) name() string { return "sqlite" }

// transact needs no host lock: every transaction begins IMMEDIATE, which
// already serialises writers. A writer waits for its turn at most lockWait,
// as a PostgreSQL transaction waits for its host lock, then fails busy.
func (d sqliteDialect) transact(ctx context.Context, _ lockOn, fn func(*Tx) error) (err error) {
	// A real-time wait bounds a wait for another writer; no decision
	// depends on it.
	wait := time.NewTimer(lockWait)
	defer wait.Stop()
	select {
	case d.writers <- struct{}{}:
		defer func() { <-d.writers }()
	case <-wait.C:
		return fmt.Errorf("begin: %w", ErrBusy)
	case <-ctx.Done():
		return ctx.Err()
	}
	sqlTx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			sqlTx.Rollback()
			panic(p)
		}
		if err != nil {
			sqlTx.Rollback()
		}
	}()
	if err := fn(&Tx{r: sqlRunner{sqlTx}}); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// retryable matches SQLITE_LOCKED, a conflict inside this process that is
// reported at once. SQLITE_BUSY is not retried: the busy handler waited
// lockWait for the other writer already, and each retry would wait as long
// again before [Classify] answers busy, as PostgreSQL's lock timeout is not
// retried either.
func (sqliteDialect) retryable(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_LOCKED
}

// lockMigrations does nothing: migrations run in one immediate transaction.
func (sqliteDialect) lockMigrations(context.Context, *sql.Conn) (func(), error) {
	return func() {}, nil
}
