package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pipeline is a runner over one pgx connection that holds a transaction:
// the one the extended protocol opens with the first statement and ends at
// the first Sync, which commits it (or rolls it back after an error). No
// BEGIN or COMMIT statement is sent: a round trip that the transaction's
// next one follows ends with a Flush instead of a Sync, which has the
// server send its answers and keeps the transaction open; only the last
// round trip ends with a Sync (commit, final). Nothing is sent until the
// first statement whose result is read, or the commit: the statements
// waiting to be sent go in front of it in the same round trip, and an
// error in any of them aborts the rest, and the transaction.
//
// BEGIN and COMMIT as statements cost a push's send, a transaction of two
// round trips, 19,000 of PostgreSQL's instructions (scripts/pgcount -mode
// push -split), as they cost a push's outcome, of one, before it was sent
// without them. Every statement still runs in the transaction, in order,
// each seeing the writes of those before it; the host lock is still taken
// first and held to the end; a lock_timeout the lock statement sets
// (set_config(…, true)) holds for the transaction. The statements are
// prepared once per connection, by the pipeline itself (pipelineStatements):
// pgx prepares with a Sync, which would commit the transaction.
type pipeline struct {
	conn *pgx.Conn
	// ctx is the transaction's context, in effect from its first round
	// trip to its end (pgconn's pipeline watches one context for its
	// life): the ctx a runner method is given is not consulted, and the
	// store's transactions give every statement the transaction's own.
	ctx context.Context
	// prelude takes the transaction's lock; it goes with the first round
	// trip.
	prelude []statement
	// queued holds later writes, sent with the next round trip.
	queued []statement
	// pp is the protocol pipeline, open from the first round trip until
	// the transaction ends.
	pp *pgconn.Pipeline
	// began reports whether the prelude has been sent, committed whether
	// the last round trip (its Sync) has; failed that a statement failed,
	// after which the server skips everything up to the Sync.
	began, committed, failed bool
}

// newPipeline returns a pipeline whose first round trip runs lock, if
// any, in a transaction that lives in ctx.
func newPipeline(ctx context.Context, conn *pgx.Conn, lock ...statement) *pipeline {
	return &pipeline{conn: conn, ctx: ctx, prelude: lock}
}

// send sends what waits and then qs in one round trip, ended by a Sync when
// last (the transaction then ends with it) or a Flush, and reads the
// results of what waited. The caller reads the results of qs from the
// returned batch and closes it; closing a last round trip reads its Sync
// and ends the pipeline.
func (p *pipeline) send(ctx context.Context, last bool, qs ...statement) (batchResults, error) {
	var waiting []statement
	if !p.began {
		waiting = p.prelude
	}
	waiting = slices.Concat(waiting, p.queued)
	p.queued, p.began = nil, true
	all := slices.Concat(waiting, qs)
	if p.pp == nil {
		p.pp = p.conn.PgConn().StartPipeline(p.ctx)
	} else if p.dead() {
		return nil, errConnClosed
	}
	sds, err := p.describe(all)
	if err != nil {
		p.failed = true
		return nil, err
	}
	// Every statement is encoded before any is sent, so that one that
	// cannot be leaves nothing of the round trip half sent.
	type bound struct {
		values        [][]byte
		formats, rfmt []int16
	}
	binds := make([]bound, len(all))
	for i, s := range all {
		var eqb pgx.ExtendedQueryBuilder
		if err := eqb.Build(p.conn.TypeMap(), sds[i], s.args); err != nil {
			return nil, fmt.Errorf("%s: %w", s.op, err)
		}
		binds[i] = bound{eqb.ParamValues, eqb.ParamFormats, slices.Clone(eqb.ResultFormats)}
	}
	for i, b := range binds {
		p.pp.SendQueryStatement(sds[i], b.values, b.formats, b.rfmt)
	}
	if last {
		p.committed = true
		err = p.pp.Sync()
	} else {
		p.pp.SendFlushRequest()
		err = p.pp.Flush()
	}
	if err != nil {
		p.failed = true
		return nil, err
	}
	br := &pipeResults{p: p, last: last}
	for _, s := range waiting {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, fmt.Errorf("%s: %w", s.op, err)
		}
	}
	return br, nil
}

// pipelineStatements is the key of a connection's prepared statements in
// its pgconn.PgConn.CustomData: a map from each statement's text to its
// description.
const pipelineStatements = "orca-push.statements"

// describe returns the description of each statement of stmts, preparing
// in a round trip of its own (ended by a Flush, so that the transaction
// stays open) those the connection has not prepared yet.
func (p *pipeline) describe(stmts []statement) ([]*pgconn.StatementDescription, error) {
	data := p.conn.PgConn().CustomData()
	cache, _ := data[pipelineStatements].(map[string]*pgconn.StatementDescription)
	if cache == nil {
		cache = make(map[string]*pgconn.StatementDescription)
		data[pipelineStatements] = cache
	}
	sds := make([]*pgconn.StatementDescription, len(stmts))
	var fresh []*pgconn.StatementDescription
	for i, s := range stmts {
		if sd := cache[s.query]; sd != nil {
			sds[i] = sd
			continue
		}
		j := slices.IndexFunc(fresh, func(sd *pgconn.StatementDescription) bool { return sd.SQL == s.query })
		if j < 0 {
			digest := sha256.Sum256([]byte(s.query))
			fresh = append(fresh, &pgconn.StatementDescription{Name: "orca_" + hex.EncodeToString(digest[:24]), SQL: s.query})
			j = len(fresh) - 1
		}
		sds[i] = fresh[j]
	}
	if len(fresh) == 0 {
		return sds, nil
	}
	for _, sd := range fresh {
		p.pp.SendPrepare(sd.Name, sd.SQL, nil)
	}
	p.pp.SendFlushRequest()
	if err := p.pp.Flush(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	for _, sd := range fresh {
		res, err := p.pp.GetResults()
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		got, ok := res.(*pgconn.StatementDescription)
		if !ok {
			return nil, fmt.Errorf("prepare: unexpected %T", res)
		}
		sd.ParamOIDs, sd.Fields = got.ParamOIDs, got.Fields
		cache[sd.SQL] = sd
	}
	return sds, nil
}

func (p *pipeline) exec(ctx context.Context, query string, args ...any) (int64, error) {
	br, err := p.send(ctx, false, statement{query: query, args: args})
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
	br, err := p.send(ctx, false, statement{query: query, args: args})
	if err != nil {
		return errRow{err}
	}
	return batchRow{br: br, row: br.QueryRow()}
}

func (p *pipeline) query(ctx context.Context, query string, args ...any) (rowSet, error) {
	br, err := p.send(ctx, false, statement{query: query, args: args})
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
	br, err := p.send(ctx, false, stmts...)
	if err != nil {
		return nil, err
	}
	return pgResults{br}, nil
}

func (p *pipeline) later(_ context.Context, op, query string, args ...any) error {
	p.queued = append(p.queued, statement{op: op, query: query, args: args})
	return nil
}

// final sends the statement with the Sync that commits the transaction; its
// row's Scan reads the Sync, so a failed commit is its error.
func (p *pipeline) final(ctx context.Context, query string, args ...any) scanner {
	br, err := p.send(ctx, true, statement{query: query, args: args})
	if err != nil {
		return errRow{err}
	}
	return batchRow{br: br, row: br.QueryRow()}
}

// commit sends the queued writes and the Sync that commits them in one
// round trip. A transaction that has sent and queued nothing has nothing to
// commit, nor one whose final statement carried the Sync.
func (p *pipeline) commit(ctx context.Context) error {
	if p.committed || !p.began && len(p.queued) == 0 {
		return nil
	}
	br, err := p.send(ctx, true)
	if err != nil {
		return err
	}
	return br.Close()
}

// rollback ends a transaction that has not committed: ROLLBACK and the Sync
// after it (after a failed statement the server skips the ROLLBACK, and the
// Sync rolls back). A connection that fails meanwhile is closed, and the
// pool destroys it, which ends the transaction too.
func (p *pipeline) rollback() {
	if p.pp == nil {
		return
	}
	if !p.dead() {
		p.pp.SendQueryParams("ROLLBACK", nil, nil, nil, nil)
		if p.pp.Sync() == nil {
			drainToSync(p.pp)
		}
	}
	p.pp.Close()
	p.pp = nil
}

// dead reports whether the connection failed: pgconn closes it then, in
// the background, and nothing more may be written to it.
func (p *pipeline) dead() bool { return p.conn.PgConn().IsClosed() }

// errConnClosed is a round trip's error on a connection that failed.
var errConnClosed = errors.New("connection closed")

// drainToSync reads pp's results up to and including the next Sync's,
// closing each result, and returns the first error among them. It stops
// early when the connection fails.
func drainToSync(pp *pgconn.Pipeline) error {
	var first error
	for {
		res, err := pp.GetResults()
		if err != nil {
			if first == nil {
				first = err
			}
			if _, refused := errors.AsType[*pgconn.PgError](err); !refused {
				return first
			}
			continue
		}
		switch r := res.(type) {
		case nil, *pgconn.PipelineSync:
			return first
		case *pgconn.ResultReader:
			if _, err := r.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
}

// batchResults are one round trip's results, read in order, each once, as
// pgx.BatchResults reads a batch's; closing them reads what is left.
type batchResults interface {
	Exec() (pgconn.CommandTag, error)
	Query() (pgx.Rows, error)
	QueryRow() pgx.Row
	Close() error
}

// pipeResults are one round trip's results (batchResults).
type pipeResults struct {
	p *pipeline
	// last reports that the round trip ended with the Sync.
	last bool
	// err is the first error read: the server skipped every statement
	// after it, and each later read returns it.
	err    error
	closed bool
}

// next returns the next statement's result reader.
func (r *pipeResults) next() (*pgconn.ResultReader, error) {
	if r.err != nil {
		return nil, r.err
	}
	res, err := r.p.pp.GetResults()
	if err == nil {
		rr, ok := res.(*pgconn.ResultReader)
		if ok {
			return rr, nil
		}
		err = fmt.Errorf("pipeline: a result expected, got %T", res)
	}
	r.fail(err)
	return nil, err
}

// fail records err as the round trip's first error.
func (r *pipeResults) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.p.failed = true
}

func (r *pipeResults) Exec() (pgconn.CommandTag, error) {
	rr, err := r.next()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := rr.Close()
	if err != nil {
		r.fail(err)
	}
	return tag, err
}

func (r *pipeResults) Query() (pgx.Rows, error) {
	rr, err := r.next()
	if err != nil {
		return nil, err
	}
	return pgx.RowsFromResultReader(r.p.conn.TypeMap(), rr), nil
}

func (r *pipeResults) QueryRow() pgx.Row {
	rows, err := r.Query()
	return pipeRow{rows: rows, err: err}
}

// Close reads what is left of the round trip: for the last, up to its
// Sync, ending the pipeline. It returns the round trip's first error, or,
// after a last round trip, that a statement of an earlier one failed (the
// Sync then rolled the transaction back).
func (r *pipeResults) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	if !r.last {
		for r.err == nil {
			res, err := r.p.pp.GetResults()
			if err != nil {
				r.fail(err)
				break
			}
			rr, ok := res.(*pgconn.ResultReader)
			if !ok {
				break
			}
			if _, err := rr.Close(); err != nil {
				r.fail(err)
			}
		}
		return r.err
	}
	if err := drainToSync(r.p.pp); err != nil {
		r.fail(err)
	}
	if err := r.p.pp.Close(); err != nil && r.err == nil {
		r.fail(err)
	}
	r.p.pp = nil
	if r.err == nil && r.p.failed {
		r.err = errors.New("rolled back: a statement failed")
	}
	return r.err
}

// pipeRow is the single row of a result.
type pipeRow struct {
	rows pgx.Rows
	err  error
}

func (r pipeRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
