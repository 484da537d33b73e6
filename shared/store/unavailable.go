package store

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"onorca.dev/push/shared/contract"
)

// lockWait bounds how long a transaction waits for its host lock: the
// PostgreSQL session's lock_timeout, and the wait for SQLite's one writer.
// A lock held longer means the request cannot be served now; waiting on
// would pin a connection that a retry by the client does not need.
const lockWait = 2 * time.Second

// Errors for a database that cannot serve a request now. Each wraps the
// contract error the edge answers with (503 and Retry-After), so a client
// tries again instead of reading a 500; [Classify] marks driver errors with
// them.
var (
	// ErrBusy: a lock or statement wait ran out, or a serialization
	// failure outlived the retries.
	ErrBusy = fmt.Errorf("store: database busy: %w", contract.ErrBusy)
	// ErrUnavailable: the database could not be reached or refused the
	// connection.
	ErrUnavailable = fmt.Errorf("store: database unavailable: %w", contract.ErrDependencyUnavailable)
)

// Classify returns err wrapped in ErrBusy or ErrUnavailable when the driver
// error it holds means that the database could not serve in time or could
// not be reached, and err unchanged otherwise. It reads codes, never text:
// PostgreSQL's SQLSTATE (55P03 lock_not_available, 57014 query_canceled by
// the statement timeout, 40001 and 40P01 once retries are spent; class 08
// connection exceptions, 53300 too_many_connections, 57P01–57P03 shutting
// down or starting), a failed connect or a connection the server dropped;
// SQLite's busy and locked codes. The edge calls it on every error it would
// otherwise answer 500.
func Classify(err error) error {
	if err == nil || errors.Is(err, ErrBusy) || errors.Is(err, ErrUnavailable) {
		return err
	}
	var pg *pgconn.PgError
	var connect *pgconn.ConnectError
	var lite *sqlite.Error
	switch {
	case errors.As(err, &connect) || lostConnection(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case errors.As(err, &pg):
		switch {
		case pg.Code == "55P03" || pg.Code == "57014" || pg.Code == "40001" || pg.Code == "40P01":
			return fmt.Errorf("%w: %w", ErrBusy, err)
		case pg.Code == "53300" || pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03" ||
			len(pg.Code) == 5 && pg.Code[:2] == "08":
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	case errors.As(err, &lite):
		switch lite.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %w", ErrBusy, err)
		}
	}
	return err
}

// lostConnection reports whether err is a connection the database dropped
// under the request (a server restarted or failed over): the pool discards
// it, and the client's retry gets a new one.
func lostConnection(err error) bool {
	return errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}
