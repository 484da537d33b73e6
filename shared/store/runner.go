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
// dominates a short transaction, so the runner pipelines: BEGIN and the host
// lock travel with the first statement, writes whose result the transaction
// never reads ([Tx.later]) travel with the next statement or with COMMIT.
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

// pipeline is a runner over one pgx connection that holds a transaction:
// an explicit one (BEGIN ... COMMIT) when it takes more than one round
// trip, else the protocol's implicit one (beginImplicitly). Nothing is
// sent until the first statement whose result is read, or the commit: the
// statements waiting to be sent go in front of it in the same round trip,
// and an error in any of them aborts the rest.
type pipeline struct {
	conn *pgx.Conn
	// prelude begins the transaction and takes its lock; it goes with
	// the first round trip.
	prelude []statement
	// queued holds later writes, sent with the next round trip.
	queued []statement
	// began reports whether the prelude has been sent, committed whether
	// COMMIT has.
	began, committed bool
}

// newPipeline returns a pipeline whose first round trip begins the
// transaction and then runs lock, if any.
func newPipeline(conn *pgx.Conn, lock ...statement) *pipeline {
	return &pipeline{conn: conn, prelude: append([]statement{{op: "begin", query: "BEGIN"}}, lock...)}
}

// send sends what waits and then qs in one round trip, and reads the
// results of what waited. The caller reads the results of qs from the
// returned batch and closes it.
func (p *pipeline) send(ctx context.Context, qs ...statement) (pgx.BatchResults, error) {
	var waiting []statement
	if !p.began {
		waiting = p.prelude
	}
	waiting = append(waiting, p.queued...)
	p.queued, p.began = nil, true
	b := &pgx.Batch{}
	for _, s := range waiting {
		b.Queue(s.query, s.args...)
	}
	for _, q := range qs {
		b.Queue(q.query, q.args...)
	}
	br := p.conn.SendBatch(ctx, b)
	for _, s := range waiting {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, fmt.Errorf("%s: %w", s.op, err)
		}
	}
	return br, nil
}

func (p *pipeline) exec(ctx context.Context, query string, args ...any) (int64, error) {
	br, err := p.send(ctx, statement{query: query, args: args})
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (p *pipeline) queryRow(ctx context.Context, query string, args ...any) scanner {
	br, err := p.send(ctx, statement{query: query, args: args})
	if err != nil {
		return errRow{err}
	}
	return batchRow{br: br, row: br.QueryRow()}
}

func (p *pipeline) query(ctx context.Context, query string, args ...any) (rowSet, error) {
	br, err := p.send(ctx, statement{query: query, args: args})
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return batchRows{Rows: rows, br: br}, nil
}

func (p *pipeline) batch(ctx context.Context, stmts []statement) (results, error) {
	br, err := p.send(ctx, stmts...)
	if err != nil {
		return nil, err
	}
	return pgResults{br}, nil
}

// pgResults reads a pipelined batch's results.
type pgResults struct{ br pgx.BatchResults }

func (b pgResults) exec() (int64, error) {
	tag, err := b.br.Exec()
	return tag.RowsAffected(), err
}

func (b pgResults) row() scanner { return b.br.QueryRow() }

func (b pgResults) rows() (rowSet, error) { return b.br.Query() }

func (b pgResults) close() error { return b.br.Close() }

func (p *pipeline) later(_ context.Context, op, query string, args ...any) error {
	p.queued = append(p.queued, statement{op: op, query: query, args: args})
	return nil
}

func (p *pipeline) final(ctx context.Context, query string, args ...any) scanner {
	implicit := p.beginImplicitly()
	qs := []statement{{query: query, args: args}}
	if !implicit {
		qs = append(qs, statement{query: "COMMIT"})
	}
	br, err := p.send(ctx, qs...)
	p.committed = true
	if err != nil {
		return errRow{err}
	}
	if implicit {
		return batchRow{br: br, row: br.QueryRow()}
	}
	return committedRow{batchRow{br: br, row: br.QueryRow()}}
}

// commit sends the queued writes and COMMIT in one round trip. A
// transaction that has sent and queued nothing has nothing to commit, nor
// one whose final statement carried COMMIT.
func (p *pipeline) commit(ctx context.Context) error {
	if p.committed || !p.began && len(p.queued) == 0 {
		return nil
	}
	if !p.beginImplicitly() {
		p.queued = append(p.queued, statement{op: "commit", query: "COMMIT"})
	}
	br, err := p.send(ctx)
	if err != nil {
		return err
	}
	return br.Close()
}

// beginImplicitly is called as the transaction's last round trip is
// sent. When nothing has been sent before, so that it is also the first,
// it takes BEGIN out of the prelude and reports true: the round trip's
// statements then run in the transaction that the extended protocol opens
// for them and that its Sync, which ends every round trip, commits, or
// rolls back after an error (PostgreSQL skips the rest of a round trip
// after an error); the caller sends no COMMIT. Nothing is
// left out but the two statements: the lock is still taken first, and
// each statement still sees the writes of those before it. A push's
// outcome is such a transaction, and BEGIN and COMMIT as statements cost
// it 21,000 of PostgreSQL's instructions (scripts/pgcount -mode push
// -split: 965,367 -> 944,320).
func (p *pipeline) beginImplicitly() bool {
	if p.began {
		return false
	}
	p.prelude = p.prelude[1:] // BEGIN
	return true
}

// rollback ends a failed transaction when one is open. A connection left
// inside a transaction is destroyed by the pool on release, so a failed
// ROLLBACK loses nothing.
func (p *pipeline) rollback(ctx context.Context) {
	if p.conn.PgConn().TxStatus() != 'I' {
		p.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
}

// batchRow reads a single row and closes its batch.
type batchRow struct {
	br  pgx.BatchResults
	row pgx.Row
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// committedRow is the row of a final statement, followed by COMMIT.
type committedRow struct{ batchRow }

func (r committedRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if _, cerr := r.br.Exec(); err == nil && cerr != nil {
		err = fmt.Errorf("commit: %w", cerr)
	}
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows is a multi-row result whose Close also closes its batch.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// errRow is a row whose Scan returns err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
