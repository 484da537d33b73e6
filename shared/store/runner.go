package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// runner runs the statements of one transaction. On SQLite it is a
// database/sql transaction: every statement runs at once, in process. On
// PostgreSQL every statement is a network round trip, the cost that
// dominates a short transaction, so the runner pipelines: the host lock
// travels with the first statement, writes whose result the transaction
// never reads ([Tx.later]) travel with the next statement or with the
// commit, and no BEGIN or COMMIT is sent (pipeline).
type runner interface {
	exec(ctx context.Context, query string, args ...any) (int64, error)
	queryRow(ctx context.Context, query string, args ...any) scanner
	query(ctx context.Context, query string, args ...any) (rowSet, error)
	// later runs a write whose outcome nobody reads, no later than the
	// next statement or the commit; its error, named op, may surface
	// there.
	later(ctx context.Context, op, query string, args ...any) error
	// final runs the transaction's last statement and returns its row; on
	// PostgreSQL the commit travels with it, so the transaction commits
	// whatever the caller does next.
	final(ctx context.Context, query string, args ...any) scanner
	// batch runs stmts, in order, in one round trip on PostgreSQL (with
	// what waits before them); the caller reads each statement's result in
	// order from the returned results, then closes them. On SQLite each
	// statement runs when its result is read.
	batch(ctx context.Context, stmts []statement) (results, error)
}

// results are the results of a batch's statements, read one after the
// other, each exactly once, in the statements' order.
type results interface {
	// exec reads the next statement's result as a write.
	exec() (int64, error)
	// row reads the next statement's one row; scan it before reading on.
	row() scanner
	// rows reads the next statement's rows; close them before reading on.
	rows() (rowSet, error)
	// close ends the batch, reporting an error the reads did not.
	close() error
}

// scanner is one row of a result, as *sql.Row and pgx.Row both provide.
type scanner interface {
	Scan(dest ...any) error
}

// rowSet is a multi-row result.
type rowSet interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// sqlQuerier is what *sql.DB and *sql.Tx share.
type sqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqlRunner is a runner over a database/sql transaction, or over the
// database itself where each statement commits on its own.
type sqlRunner struct {
	tx sqlQuerier
}

func (r sqlRunner) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := r.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (r sqlRunner) queryRow(ctx context.Context, query string, args ...any) scanner {
	return r.tx.QueryRowContext(ctx, query, args...)
}

func (r sqlRunner) query(ctx context.Context, query string, args ...any) (rowSet, error) {
	rows, err := r.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (r sqlRunner) later(ctx context.Context, op, query string, args ...any) error {
	if _, err := r.tx.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (r sqlRunner) final(ctx context.Context, query string, args ...any) scanner {
	return r.queryRow(ctx, query, args...)
}

func (r sqlRunner) batch(ctx context.Context, stmts []statement) (results, error) {
	return &sqlResults{r: r, ctx: ctx, stmts: stmts}, nil
}

// sqlResults runs each statement of a batch when its result is read.
type sqlResults struct {
	r     sqlRunner
	ctx   context.Context
	stmts []statement
	next  int
}

// take returns the statement whose result is read next.
func (b *sqlResults) take() statement {
	s := b.stmts[b.next]
	b.next++
	return s
}

func (b *sqlResults) exec() (int64, error) {
	s := b.take()
	return b.r.exec(b.ctx, s.query, s.args...)
}

func (b *sqlResults) row() scanner {
	s := b.take()
	return b.r.queryRow(b.ctx, s.query, s.args...)
}

func (b *sqlResults) rows() (rowSet, error) {
	s := b.take()
	return b.r.query(b.ctx, s.query, s.args...)
}

func (b *sqlResults) close() error { return nil }

// sqlRows adapts *sql.Rows to rowSet.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// statement is a statement of a pipeline; op names it in errors.
type statement struct {
	op    string
	query string
	args  []any
}

// pgResults reads a pipelined batch's results.
type pgResults struct{ br batchResults }

func (b pgResults) exec() (int64, error) {
	tag, err := b.br.Exec()
	return tag.RowsAffected(), err
}

func (b pgResults) row() scanner { return b.br.QueryRow() }

func (b pgResults) rows() (rowSet, error) { return b.br.Query() }

func (b pgResults) close() error { return b.br.Close() }

// batchRow reads a single row and closes its batch.
type batchRow struct {
	br  batchResults
	row pgx.Row
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows is a multi-row result whose Close also closes its batch.
type batchRows struct {
	pgx.Rows
	br batchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// errRow is a row whose Scan returns err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
