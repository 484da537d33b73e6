package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxGroupMembers bounds how many calls share one PostgreSQL transaction: a
// group holds every member's host lock until it commits.
const maxGroupMembers = 8

// sendSlots and deliverySlots bound the transactions, alone or shared, that
// the combiner of sends, and those of claims and of outcomes, have in
// flight (see [newCombiner]). Measured on two cores at 16 concurrent hosts
// or deliveries: a send takes two or three round trips, so with one slot
// sends wait on the network (BenchmarkSendAdmission, 5 registrations:
// 10–12k registrations/s with two slots, 7.6k with one, and fewer with
// five); a claim and an outcome take one round trip each, so one slot
// makes the largest groups and the fewest transactions (BenchmarkDeliver:
// 410–454 µs/op with one slot, 467–545 with two).
const (
	sendSlots     = 2
	deliverySlots = 1
)

// slotLockWait bounds how long a transaction in a combiner's slot, alone
// or shared, waits for a lock. A host lock held longer (a stalled
// transaction elsewhere, until its timeouts end it) would otherwise hold the
// slot for the session's lockWait and every other host's calls behind it:
// instead the transaction gives the slot up and its calls wait alone, with
// the full lockWait, outside the slots. A host lock is held for a
// transaction's few round trips, so the wait is many times what a busy host
// makes a slot wait.
const slotLockWait = 100 * time.Millisecond

// errGroupFailed ends the members of a shared transaction that failed: each
// then runs again on its own.
var errGroupFailed = errors.New("store: shared transaction failed")

// combiner shares one PostgreSQL transaction among the calls of one kind
// (sends, claims, delivery outcomes) that arrive while as many are in
// flight as it has slots: group commit. A call that finds a slot free runs
// alone, at once, exactly as without the combiner; one that finds every
// slot taken waits, and when a slot frees the first waiter leads the next
// group with up to maxGroupMembers waiters. There is no timer: a lone call
// never waits, and under load one lock statement, one commit and each
// round trip serve the whole group.
type combiner struct {
	d postgresDialect
	// slots bounds the transactions in flight, alone or shared.
	slots int
	// lockWait is the lock_timeout of a transaction in a slot:
	// slotLockWait.
	lockWait string

	// mu guards running and waiting.
	mu sync.Mutex
	// running counts the transactions in flight.
	running int
	// waiting holds the calls waiting for a group, in arrival order.
	waiting []*groupCall
	// observe, when set, learns of each shared transaction (see
	// [Store.ObserveGroups]).
	observe *atomic.Pointer[func(members int, failed bool)]
}

// newCombiner returns a combiner with maxSlots slots for a pool of poolMax
// connections, or a quarter of the pool when that is fewer, so that the
// rest serve the other work: more slots make smaller groups, and each group
// costs the database its lock statement and commit.
func newCombiner(d postgresDialect, poolMax, maxSlots int, observe *atomic.Pointer[func(int, bool)]) *combiner {
	return &combiner{d: d, slots: slotCount(poolMax, maxSlots), observe: observe,
		lockWait: lockTimeout(slotLockWait)}
}

// slotCount is the slots of a combiner of at most maxSlots for a pool of
// poolMax connections: a quarter of the pool when that is fewer, at least
// one.
func slotCount(poolMax, maxSlots int) int { return min(max(1, poolMax/4), maxSlots) }

// groupCall is one call of a combiner.
type groupCall struct {
	ctx context.Context
	// on names the lock the call needs: a group takes every member's. A
	// group holds at most one call per host it names (a call that reads
	// and then writes must see the one before it of its host); calls
	// naming a batch are single statements and need no such care.
	on lockOn
	// fn is the call's work, given the group's transaction.
	fn func(*Tx) error
	// alone runs the call on its own with lock_timeout wait, or the
	// session's when wait is empty: in a slot, the combiner's lockWait;
	// outside the slots, after its group failed or its lock stayed busy,
	// the session's.
	alone func(wait string) error
	// lead is signalled when the call is to lead the next group.
	lead chan struct{}
	// done receives the call's outcome when another call led its group:
	// nil once committed, errGroupFailed when it must run alone.
	done chan error
}

// do runs call alone or in a group; see [Store.SharedHostTx].
func (c *combiner) do(call *groupCall) error {
	call.lead, call.done = make(chan struct{}, 1), make(chan error, 1)
	c.mu.Lock()
	if c.running < c.slots && len(c.waiting) == 0 {
		c.running++
		c.mu.Unlock()
		return c.runAlone(call)
	}
	c.waiting = append(c.waiting, call)
	c.mu.Unlock()
	cancelled := call.ctx.Done()
	for {
		select {
		case <-call.lead:
			return c.lead(call)
		case err := <-call.done:
			return outcome(call, err)
		case <-cancelled:
			if c.leave(call) {
				return call.ctx.Err()
			}
			// A group took the call already: see it through.
			cancelled = nil
		}
	}
}

// leave takes call out of the waiting calls and reports whether it was
// still there.
func (c *combiner) leave(call *groupCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.waiting, call)
	if i >= 0 {
		c.waiting = slices.Delete(c.waiting, i, i+1)
	}
	return i >= 0
}

// outcome is a member's answer: nil once its group committed, the error of
// a commit that failed (it may have committed, as a lone transaction's may);
// after a group that failed before the commit it runs alone.
func outcome(call *groupCall, err error) error {
	if errors.Is(err, errGroupFailed) {
		return call.alone("")
	}
	return err
}

// runAlone runs call on its own in the slot it holds, then frees the slot.
// When its lock stayed busy past slotLockWait, it runs again outside the
// slots with the full wait.
func (c *combiner) runAlone(call *groupCall) error {
	err := call.alone(c.lockWait)
	c.release()
	if lockBusy(err) {
		return call.alone("")
	}
	return err
}

// lockBusy reports whether err is PostgreSQL's 55P03 lock_not_available: a
// lock wait ran out.
func lockBusy(err error) bool {
	pg, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pg.Code == "55P03"
}

// lockTimeout is d as a lock_timeout setting.
func lockTimeout(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
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

// lead runs the group first leads: first and the waiters after it, one per
// host, up to maxGroupMembers, in one transaction; then it frees its slot
// and answers the members. A group of one runs alone.
func (c *combiner) lead(first *groupCall) error {
	c.mu.Lock()
	group := []*groupCall{first}
	rest := c.waiting[:0]
	for _, w := range c.waiting {
		if len(group) < maxGroupMembers && (w.on.host == "" ||
			!slices.ContainsFunc(group, func(g *groupCall) bool { return g.on.host == w.on.host })) {
			group = append(group, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(c.waiting[len(rest):])
	c.waiting = rest
	c.mu.Unlock()
	if len(group) == 1 {
		return c.runAlone(first)
	}
	errs := c.d.transactGroup(first.ctx, group, c.lockWait)
	c.release()
	if f := c.observe.Load(); f != nil {
		(*f)(len(group), errors.Is(errs[0], errGroupFailed))
	}
	for i, m := range group[1:] {
		m.done <- errs[i+1]
	}
	return outcome(first, errs[0])
}

// groupLocks takes the locks the calls name, hosts given or read from their
// batches, each once and all in the order of their keys, in one statement:
// two groups, or a group and a lone transaction, never wait on each other
// in a cycle. A group holds a slot, so it waits for them at most wait, set
// as lockStatements does (empty on the slot pool, whose sessions wait that
// long already); when they stay busy the group fails and its members run
// alone. None when the calls name no lock.
//
// Sends name hosts only, and their statement reads no table. Reading the
// batches of none cost a scan of the whole batch table: the statement is
// prepared once per connection and soon runs on a generic plan, made for
// any array of batch ids, and a plan made while the table was small scans
// it, as long as the connection lives (TestGroupLockPlans). In
// BenchmarkSendAdmission, 8000 sends of 16 hosts, that scan was an eighth of
// PostgreSQL's CPU per send, and it grows with the table.
func groupLocks(calls []*groupCall, wait string) []statement {
	var hosts, batches []string
	for _, c := range calls {
		switch {
		case c.on.host != "":
			hosts = append(hosts, c.on.host)
		case c.on.batch != "":
			batches = append(batches, c.on.batch)
		}
	}
	named := `SELECT unnest($2::text[]) AS h`
	args := []any{hostLockPrefix, hosts}
	switch {
	case len(hosts) == 0 && len(batches) == 0:
		return nil
	case len(batches) > 0:
		named += ` UNION ALL SELECT host_fingerprint FROM push_delivery_batches WHERE batch_id = ANY($3::text[])`
		args = append(args, batches)
	}
	// The sorted subquery is a fence (OFFSET 0): the locks are taken row
	// by row in its order.
	query := `SELECT pg_advisory_xact_lock(k) FROM (
			SELECT DISTINCT hashtextextended($1 || h, 0) AS k FROM (` + named + `) AS named
			ORDER BY k OFFSET 0) AS keys`
	if wait != "" {
		args = append(args, wait)
		query += ` WHERE set_config('lock_timeout', $` + strconv.Itoa(len(args)) + `, true) IS NOT NULL`
	}
	return []statement{{op: "lock hosts", query: query, args: args}}
}

// transactGroup runs the fn of every call in one transaction on one
// connection, under the locks they name (groupLocks, waited for at most
// lockWait), and commits it. The members run at once, each in its own
// goroutine, and their round trips go together: once every member still
// running has asked for its next round trip, one pipelined round trip
// carries them all, in member order, with the writes they left for later;
// each member then reads its own results in turn. When every member asks for its final statement, the commit goes with
// them; otherwise it goes, with their last writes, once every member has
// returned. A member's error, or any statement's before the commit, rolls the
// whole group back and returns errGroupFailed: the members then run alone.
// The error of the commit round trip is returned as it is: the group may
// have committed, so the members answer it as a lone transaction would.
func (d postgresDialect) transactGroup(ctx context.Context, calls []*groupCall, lockWait string) (errs []error) {
	// A member's client going away must not fail the others; the deadline
	// still bounds the group.
	gctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		gctx, cancel = context.WithDeadline(gctx, dl)
		defer cancel()
	}
	pool, wait := d.poolFor(lockWait)
	conn, err := pool.Acquire(gctx)
	if err != nil {
		return fill(make([]error, len(calls)), fmt.Errorf("%w: begin: %w", errGroupFailed, err))
	}
	defer conn.Release()
	p := newPipeline(gctx, conn.Conn(), groupLocks(calls, wait)...)
	// A connection that fails inside a transaction is destroyed by the
	// pool, so a failed ROLLBACK loses nothing.
	defer p.rollback()
	g := &group{p: p, arrive: make(chan arrival, len(calls)), read: make(chan struct{})}
	members := make([]*member, len(calls))
	for i, c := range calls {
		members[i] = &member{g: g, i: i, turn: make(chan batchResults, 1)}
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

// arrival is a member's request to its group: a round trip of stmts (final
// when they end the member's work), or, when done is set, its end with the
// error it returned.
type arrival struct {
	i     int
	stmts []statement
	final bool
	done  bool
	err   error
}

// run serves the members' round trips until every member has returned,
// then commits, or rolls back when any failed; it returns each member's
// outcome.
func (g *group) run(ctx context.Context, members []*member) []error {
	errs := make([]error, len(members))
	live := len(members)
	var failed, commitErr error
	committed := false
	for live > 0 {
		asked := make([][]statement, len(members))
		waiting, finals := 0, 0
		for n := live; n > 0; n-- {
			a := <-g.arrive
			if a.done {
				live--
				errs[a.i] = a.err
				if a.err != nil && failed == nil {
					failed = a.err
				}
				continue
			}
			asked[a.i] = a.stmts
			waiting++
			if a.final {
				finals++
			}
		}
		if waiting == 0 {
			break
		}
		if failed != nil || committed {
			// Fail every member still asking, then wait for them. (A
			// member asking again after its final statement breaks
			// final's contract.)
			for i, stmts := range asked {
				if stmts != nil {
					members[i].turn <- nil
				}
			}
			if failed == nil {
				failed = errors.New("a statement after the final one")
			}
			continue
		}
		var err error
		if committed = finals == live; committed {
			commitErr, err = g.roundTrip(ctx, members, asked, true)
		} else {
			_, err = g.roundTrip(ctx, members, asked, false)
		}
		if err != nil {
			failed, committed = err, false
		}
	}
	_, refused := errors.AsType[*pgconn.PgError](failed)
	switch {
	case committed && (commitErr != nil || refused):
		// A statement the server refused skips the commit after it.
		// the pipeline reports that refusal again as the commit's result
		// (TestSharedHostTxFinalRoundRefused); refused keeps the group
		// failed should a driver report nothing there.
		return fill(errs, commitError(errors.Join(commitErr, failed)))
	case committed:
		// Every member's statements ran and the commit with them: each
		// answers its own outcome.
		return errs
	case failed != nil:
		return fill(errs, fmt.Errorf("%w: %w", errGroupFailed, failed))
	}
	for _, m := range members {
		g.p.queued = append(g.p.queued, m.queued...)
	}
	if err := g.p.commit(ctx); err != nil {
		return fill(errs, commitError(err))
	}
	return errs
}

// commitError is the members' outcome of a commit that failed, err holding
// its error and any a member saw: when the server refused a statement
// nothing committed and each member runs alone; otherwise the group may
// have committed, and the error is returned.
func commitError(err error) error {
	if _, refused := errors.AsType[*pgconn.PgError](err); refused {
		return fmt.Errorf("%w: %w", errGroupFailed, err)
	}
	return fmt.Errorf("commit: %w", err)
}

// fill sets every element of errs to err and returns errs.
func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// roundTrip sends what the members left for later and the statements they
// asked for in one round trip, the commit after them when commit is set, then
// lets each asking member read its results in member order. err is the
// round trip's failure; commitErr is the commit's.
func (g *group) roundTrip(ctx context.Context, members []*member, asked [][]statement, commit bool) (commitErr, err error) {
	var stmts []statement
	for i, m := range members {
		g.p.queued = append(g.p.queued, m.queued...)
		m.queued = nil
		stmts = append(stmts, asked[i]...)
	}
	br, err := g.p.send(ctx, commit, stmts...)
	if err != nil {
		for i, s := range asked {
			if s != nil {
				members[i].turn <- nil
			}
		}
		return nil, err
	}
	for i, s := range asked {
		if s == nil {
			continue
		}
		members[i].turn <- br
		<-g.read
	}
	// Closing the last round trip reads its Sync, which commits: its
	// error is the commit's.
	commitErr = br.Close()
	if !commit {
		commitErr = nil
	}
	return commitErr, nil
}

// member is one call's runner inside a group.
type member struct {
	g *group
	i int
	// queued holds the member's later writes, sent with the group's next
	// round trip or the commit.
	queued []statement
	// turn gives the member the round trip's results when its turn to
	// read comes, or nil when the group failed.
	turn chan batchResults
}

func (m *member) batch(_ context.Context, stmts []statement) (results, error) {
	return m.ask(stmts, false)
}

// ask asks the group for a round trip of stmts, final when they end the
// member's work, and waits for its turn to read the results.
func (m *member) ask(stmts []statement, final bool) (results, error) {
	if len(stmts) == 0 {
		stmts = []statement{}
	}
	m.g.arrive <- arrival{i: m.i, stmts: stmts, final: final}
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

// final is queryRow, and tells the group that the member's work ends with
// it: when every member's does, the commit goes in the same round trip.
func (m *member) final(_ context.Context, query string, args ...any) scanner {
	res, err := m.ask([]statement{{query: query, args: args}}, true)
	if err != nil {
		return errRow{err}
	}
	return closingRow{res}
}

// memberResults are one member's share of a round trip's results; closing
// them reads what the member left unread and passes the turn on.
type memberResults struct {
	m    *member
	br   batchResults
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
