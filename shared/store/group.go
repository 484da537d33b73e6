package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// maxGroupMembers bounds how many host transactions share one PostgreSQL
// transaction: a group holds every member's host lock until it commits.
const maxGroupMembers = 8

// errGroupFailed ends the members of a shared transaction that failed: each
// then runs again in a transaction of its own.
var errGroupFailed = errors.New("store: shared transaction failed")

// combiner shares one PostgreSQL transaction among the host transactions
// ([Store.SharedHostTx]) that arrive while as many are in flight as it has
// slots: group commit. A call that finds a slot free runs alone, at once,
// exactly as [Store.HostTx]; one that finds every slot taken waits, and when
// a slot frees the first waiter leads the next group with up to
// maxGroupMembers waiters of other hosts. There is no timer: a lone call
// never waits, and under load one commit, one lock statement and each round
// trip serve the whole group.
type combiner struct {
	d postgresDialect
	// slots bounds the shared transactions in flight, each on one
	// connection.
	slots int

	// mu guards running and waiting.
	mu sync.Mutex
	// running counts the transactions in flight.
	running int
	// waiting holds the calls waiting for a group, in arrival order.
	waiting []*groupCall
}

// groupCall is one call of [Store.SharedHostTx].
type groupCall struct {
	ctx  context.Context
	host string
	fn   func(*Tx) error
	// lead is signalled when the call is to lead the next group.
	lead chan struct{}
	// done receives the call's outcome when another call led its group:
	// nil once committed, errGroupFailed when it must run alone.
	done chan error
}

// do runs fn under host's lock, alone or in a group; see
// [Store.SharedHostTx].
func (c *combiner) do(ctx context.Context, s *Store, host string, fn func(*Tx) error) error {
	call := &groupCall{ctx: ctx, host: host, fn: fn, lead: make(chan struct{}, 1), done: make(chan error, 1)}
	c.mu.Lock()
	if c.running < c.slots && len(c.waiting) == 0 {
		c.running++
		c.mu.Unlock()
		err := s.transact(ctx, lockOn{host: host}, fn)
		c.release()
		return err
	}
	c.waiting = append(c.waiting, call)
	c.mu.Unlock()
	select {
	case <-call.lead:
		return c.lead(s, call)
	case err := <-call.done:
		return c.outcome(s, call, err)
	case <-ctx.Done():
	}
	c.mu.Lock()
	if i := slices.Index(c.waiting, call); i >= 0 {
		c.waiting = slices.Delete(c.waiting, i, i+1)
		c.mu.Unlock()
		return ctx.Err()
	}
	c.mu.Unlock()
	// A group took the call already: see it through.
	select {
	case <-call.lead:
		return c.lead(s, call)
	case err := <-call.done:
		return c.outcome(s, call, err)
	}
}

// outcome is a member's answer: nil once its group committed, the error of
// a COMMIT that failed (it may have committed, as a lone transaction's may);
// after a group that failed before COMMIT it runs alone.
func (c *combiner) outcome(s *Store, call *groupCall, err error) error {
	if errors.Is(err, errGroupFailed) {
		return s.transact(call.ctx, lockOn{host: call.host}, call.fn)
	}
	return err
}

// release gives a finished transaction's slot to the first waiter, which
// leads the next group, or frees it.
func (c *combiner) release() {
	c.mu.Lock()
	if len(c.waiting) == 0 {
		c.running--
		c.mu.Unlock()
		return
	}
	next := c.waiting[0]
	c.waiting = slices.Delete(c.waiting, 0, 1)
	c.mu.Unlock()
	next.lead <- struct{}{}
}

// lead runs the group first leads: first and the waiters of other hosts, up
// to maxGroupMembers, in one transaction; then it frees its slot and answers
// the members. A group of one is a transaction of its own.
func (c *combiner) lead(s *Store, first *groupCall) error {
	c.mu.Lock()
	group := []*groupCall{first}
	rest := c.waiting[:0]
	for _, w := range c.waiting {
		if len(group) < maxGroupMembers && !slices.ContainsFunc(group, func(g *groupCall) bool { return g.host == w.host }) {
			group = append(group, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(c.waiting[len(rest):])
	c.waiting = rest
	c.mu.Unlock()
	if len(group) == 1 {
		err := s.transact(first.ctx, lockOn{host: first.host}, first.fn)
		c.release()
		return err
	}
	err := c.d.transactGroup(first.ctx, group)
	c.release()
	for _, m := range group[1:] {
		m.done <- err
	}
	return c.outcome(s, first, err)
}

// transactGroup runs the fn of every call, each under its host's lock, in
// one transaction on one connection, and commits it. The host locks are
// taken in the hosts' order in one statement, so two groups never wait on
// each other in a cycle. The members run at once, each in its own
// goroutine, and their round trips go together: once every member still
// running has asked for its next round trip, one pipelined round trip
// carries them all, in member order, with the writes they left for later;
// each member then reads its own results in turn. Once every member has
// returned, their last writes go with COMMIT. A member's error, or any
// statement's before COMMIT, rolls the whole group back and returns
// errGroupFailed: the members then run alone. The error of the COMMIT
// round trip is returned as it is: the group may have committed, so the
// members answer it as a lone transaction would.
func (d postgresDialect) transactGroup(ctx context.Context, calls []*groupCall) (err error) {
	// A member's client going away must not fail the others; the deadline
	// still bounds the group.
	gctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		gctx, cancel = context.WithDeadline(gctx, dl)
		defer cancel()
	}
	conn, err := d.pool.Acquire(gctx)
	if err != nil {
		return fmt.Errorf("%w: begin: %w", errGroupFailed, err)
	}
	defer conn.Release()
	hosts := make([]string, len(calls))
	for i, c := range calls {
		hosts[i] = c.host
	}
	slices.Sort(hosts)
	p := newPipeline(conn.Conn(), statement{op: "lock hosts",
		query: `SELECT pg_advisory_xact_lock(hashtextextended($1 || h, 0)) FROM unnest($2::text[]) AS h`,
		args:  []any{hostLockPrefix, hosts}})
	defer func() {
		if err != nil {
			p.rollback(gctx)
		}
	}()
	g := &group{p: p, arrive: make(chan arrival, len(calls)), read: make(chan struct{})}
	members := make([]*member, len(calls))
	for i, c := range calls {
		members[i] = &member{g: g, i: i, turn: make(chan pgx.BatchResults, 1)}
		go func() {
			err := errGroupFailed
			defer func() {
				// A panic fails the group; the member then panics
				// again when it runs alone, in its caller's goroutine.
				recover()
				g.arrive <- arrival{i: i, done: true, err: err}
			}()
			err = c.fn(&Tx{r: members[i]})
		}()
	}
	return g.run(gctx, members)
}

// group is a transaction that members share.
type group struct {
	p *pipeline
	// arrive carries each member's next request: a round trip, or its end.
	arrive chan arrival
	// read is signalled by the member whose turn it is once it has read its
	// results.
	read chan struct{}
}

// arrival is a member's request to its group.
type arrival struct {
	i     int
	stmts []statement
	done  bool
	err   error
}

// run serves the members' round trips until every member has returned,
// then commits, or rolls back when any failed.
func (g *group) run(ctx context.Context, members []*member) error {
	live := len(members)
	var failed error
	for live > 0 {
		asked := make([][]statement, len(members))
		waiting := 0
		for n := live; n > 0; n-- {
			a := <-g.arrive
			if a.done {
				live--
				if a.err != nil && failed == nil {
					failed = a.err
				}
				continue
			}
			asked[a.i] = a.stmts
			waiting++
		}
		if waiting == 0 {
			break
		}
		if failed != nil {
			// Fail every member still asking, then wait for them.
			for i, stmts := range asked {
				if stmts != nil {
					members[i].turn <- nil
				}
			}
			continue
		}
		if err := g.roundTrip(ctx, members, asked); err != nil {
			failed = err
		}
	}
	if failed != nil {
		return fmt.Errorf("%w: %w", errGroupFailed, failed)
	}
	for _, m := range members {
		g.p.queued = append(g.p.queued, m.queued...)
	}
	if err := g.p.commit(ctx); err != nil {
		if _, refused := errors.AsType[*pgconn.PgError](err); refused {
			// The server refused a statement: nothing committed.
			return fmt.Errorf("%w: %w", errGroupFailed, err)
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// roundTrip sends what the members left for later and the statements they
// asked for in one round trip, then lets each asking member read its
// results in member order.
func (g *group) roundTrip(ctx context.Context, members []*member, asked [][]statement) error {
	var stmts []statement
	for i, m := range members {
		g.p.queued = append(g.p.queued, m.queued...)
		m.queued = nil
		stmts = append(stmts, asked[i]...)
	}
	br, err := g.p.send(ctx, stmts...)
	if err != nil {
		for i, s := range asked {
			if s != nil {
				members[i].turn <- nil
			}
		}
		return err
	}
	for i, s := range asked {
		if s == nil {
			continue
		}
		members[i].turn <- br
		<-g.read
	}
	return br.Close()
}

// member is one call's runner inside a group.
type member struct {
	g *group
	i int
	// queued holds the member's later writes, sent with the group's next
	// round trip or COMMIT.
	queued []statement
	// turn gives the member the round trip's results when its turn to
	// read comes, or nil when the group failed.
	turn chan pgx.BatchResults
}

func (m *member) batch(_ context.Context, stmts []statement) (results, error) {
	if len(stmts) == 0 {
		stmts = []statement{}
	}
	m.g.arrive <- arrival{i: m.i, stmts: stmts}
	br := <-m.turn
	if br == nil {
		return nil, errGroupFailed
	}
	return &memberResults{m: m, br: br, left: len(stmts)}, nil
}

func (m *member) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := m.batch(ctx, []statement{{query: query, args: args}})
	if err != nil {
		return 0, err
	}
	n, err := res.exec()
	return n, closeResults(res, err, "exec")
}

func (m *member) queryRow(ctx context.Context, query string, args ...any) scanner {
	res, err := m.batch(ctx, []statement{{query: query, args: args}})
	if err != nil {
		return errRow{err}
	}
	return closingRow{res}
}

func (m *member) query(ctx context.Context, query string, args ...any) (rowSet, error) {
	res, err := m.batch(ctx, []statement{{query: query, args: args}})
	if err != nil {
		return nil, err
	}
	rows, err := res.rows()
	if err != nil {
		res.close()
		return nil, err
	}
	return closingRows{rowSet: rows, res: res}, nil
}

func (m *member) later(_ context.Context, op, query string, args ...any) error {
	m.queued = append(m.queued, statement{op: op, query: query, args: args})
	return nil
}

// final is queryRow: the group commits once every member has returned.
func (m *member) final(ctx context.Context, query string, args ...any) scanner {
	return m.queryRow(ctx, query, args...)
}

// memberResults are one member's share of a round trip's results; closing
// them reads what the member left unread and passes the turn on.
type memberResults struct {
	m    *member
	br   pgx.BatchResults
	left int
	// closed reports whether close ran.
	closed bool
}

func (r *memberResults) exec() (int64, error) {
	r.left--
	tag, err := r.br.Exec()
	return tag.RowsAffected(), err
}

func (r *memberResults) row() scanner {
	r.left--
	return r.br.QueryRow()
}

func (r *memberResults) rows() (rowSet, error) {
	r.left--
	return r.br.Query()
}

func (r *memberResults) close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	var err error
	for ; r.left > 0; r.left-- {
		if _, e := r.br.Exec(); err == nil {
			err = e
		}
	}
	r.m.g.read <- struct{}{}
	return err
}

// closingRow is a single row whose Scan closes its results.
type closingRow struct{ res results }

func (r closingRow) Scan(dest ...any) error {
	err := r.res.row().Scan(dest...)
	return closeResults(r.res, err, "query")
}

// closingRows are rows whose Close closes their results.
type closingRows struct {
	rowSet
	res results
}

func (r closingRows) Close() {
	r.rowSet.Close()
	r.res.close()
}
