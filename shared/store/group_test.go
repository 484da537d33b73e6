package store_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// groupStore opens a PostgreSQL store, through the round-trip counting
// proxy, whose pool of 4 gives SharedHostTx one slot, with the test table
// group_counters (export_test.go).
func groupStore(t *testing.T) (*store.Store, store.Options, *storetest.RoundTrips) {
	t.Helper()
	opts, rt := storetest.CountingPostgres(t)
	opts.PoolMax = 4
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := storetest.SQL(t, opts).Exec(`CREATE TABLE group_counters (host TEXT PRIMARY KEY, n BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return s, opts, rt
}

// groupCall is a SharedHostTx call a test queues.
type groupCall struct {
	host string
	fn   func(*store.Tx) error
}

// queueCalls starts SharedHostTx calls and returns once all of them wait
// for a group; see lineUp.
func queueCalls(t *testing.T, ctx context.Context, s *store.Store, calls []groupCall) (wait func() []error) {
	t.Helper()
	var fns []func() error
	for _, c := range calls {
		fns = append(fns, func() error { return s.SharedHostTx(ctx, c.host, c.fn) })
	}
	return lineUp(t, s, fns)
}

// lineUp starts fns, each a call of s that waits for a group, one after the
// other, and returns once all of them wait; the returned wait collects
// their errors, in order, a panic as an error "panic: …".
func lineUp(t *testing.T, s *store.Store, fns []func() error) (wait func() []error) {
	t.Helper()
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("panic: %v", r)
				}
			}()
			errs[i] = fn()
		})
		storetest.WaitFor(t, func() bool { return s.SharedWaiting() == i+1 })
	}
	return func() []error {
		wg.Wait()
		return errs
	}
}

// openAgain opens another store on opts' database and schema, as another
// instance of the gateway would; it is closed when t ends.
func openAgain(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustSucceed fails t at the first of errs that is not nil.
func mustSucceed(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// countFailedGroups counts the shared transactions of stores that failed
// (Store.ObserveGroups).
func countFailedGroups(stores ...*store.Store) *atomic.Int64 {
	var failed atomic.Int64
	for _, s := range stores {
		s.ObserveGroups(func(_ int, f bool) {
			if f {
				failed.Add(1)
			}
		})
	}
	return &failed
}

// touchAndTxID touches host and records its transaction's id in *id.
func touchAndTxID(ctx context.Context, host string, id *int64) func(*store.Tx) error {
	return func(tx *store.Tx) error {
		if err := tx.TouchHost(ctx, host, "key", 1); err != nil {
			return err
		}
		var err error
		*id, err = tx.TxID(ctx)
		return err
	}
}

// TestSharedHostTxGroups queues four hosts' transactions behind a busy slot:
// they run as one transaction, in the round trips one of them takes alone,
// and all commit.
func TestSharedHostTxGroups(t *testing.T) {
	ctx := context.Background()
	s, _, rt := groupStore(t)
	// Each round runs once to warm the connections' statement caches
	// (a statement's first use on a connection costs a round trip more),
	// then once counted.
	var aloneTrips int64
	for range 2 {
		var id int64
		before := rt.Load()
		if err := s.SharedHostTx(ctx, "host0", touchAndTxID(ctx, "host0", &id)); err != nil {
			t.Fatal(err)
		}
		aloneTrips = rt.Load() - before
	}
	var members, failed atomic.Int64
	s.ObserveGroups(func(n int, groupFailed bool) {
		members.Add(int64(n))
		if groupFailed {
			failed.Add(int64(n))
		}
	})
	for round := range 2 {
		free := storetest.HoldSlot(t, s)
		ids := make([]int64, 4)
		var calls []groupCall
		for i := range ids {
			host := fmt.Sprintf("host%d", round*4+i+1)
			calls = append(calls, groupCall{host, touchAndTxID(ctx, host, &ids[i])})
		}
		wait := queueCalls(t, ctx, s, calls)
		before := rt.Load()
		free()
		for i, err := range wait() {
			if err != nil {
				t.Errorf("%s: %v", calls[i].host, err)
			}
		}
		if trips := rt.Load() - before; round == 1 && trips != aloneTrips {
			t.Errorf("four hosts together took %d round trips, want %d as one alone", trips, aloneTrips)
		}
		for i, id := range ids {
			if id != ids[0] {
				t.Errorf("%s ran in transaction %d, %s in %d: want one transaction", calls[i].host, id, calls[0].host, ids[0])
			}
		}
	}
	if got := mustCounts(t, s)["push_hosts"]; got != 9 {
		t.Errorf("push_hosts has %d rows, want 9", got)
	}
	if m, f := members.Load(), failed.Load(); m != 8 || f != 0 {
		t.Errorf("observed %d members, %d of them failed; want 8 and 0", m, f)
	}
}

// TestSharedHostTxMemberFails fails the middle member of a group of three
// after it wrote, in each way a member can fail: its fn returns an error, a
// statement of its round trip fails (which fails the later members' reads
// too), the server refuses its last write at COMMIT, or it panics. The group
// rolls back, the other two run again alone and commit, and the failing one
// answers what it answers alone, with nothing of it kept.
func TestSharedHostTxMemberFails(t *testing.T) {
	ctx := context.Background()
	s, _, _ := groupStore(t)
	// tok0 is taken: a second session with that hash violates the key.
	if err := s.HostTx(ctx, "hostZ", func(tx *store.Tx) error {
		return tx.ReplaceSession(ctx, "hostZ", "tok0", 9000, 1)
	}); err != nil {
		t.Fatal(err)
	}
	good := func(host string, runs *atomic.Int32) func(*store.Tx) error {
		return func(tx *store.Tx) error {
			runs.Add(1)
			if err := tx.TouchHost(ctx, host, "key", 1); err != nil {
				return err
			}
			_, err := tx.TxID(ctx)
			return err
		}
	}
	var members, failed atomic.Int64
	s.ObserveGroups(func(n int, groupFailed bool) {
		members.Add(int64(n))
		if groupFailed {
			failed.Add(int64(n))
		}
	})
	for _, tt := range []struct {
		name    string
		then    func(*store.Tx) error // after the bad member's write and read
		wantErr string
	}{
		{"fn fails", func(*store.Tx) error { return errors.New("boom") }, "boom"},
		{"statement fails", func(tx *store.Tx) error { return tx.DivideByZero(ctx) }, "division by zero"},
		{"write refused at commit", func(tx *store.Tx) error {
			return tx.ReplaceSession(ctx, "hostB", "tok0", 9000, 1)
		}, "insert session"},
		{"panic", func(*store.Tx) error { panic("boom") }, "panic: boom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := mustCounts(t, s)
			var runs [3]atomic.Int32
			free := storetest.HoldSlot(t, s)
			wait := queueCalls(t, ctx, s, []groupCall{
				{"hostA", good("hostA", &runs[0])},
				{"hostB", func(tx *store.Tx) error {
					if err := good("hostB", &runs[1])(tx); err != nil {
						return err
					}
					return tt.then(tx)
				}},
				{"hostC", good("hostC", &runs[2])},
			})
			free()
			errs := wait()
			if errs[0] != nil || errs[2] != nil || errs[1] == nil || !strings.Contains(errs[1].Error(), tt.wantErr) {
				t.Errorf("errors %v, want nil, %q, nil", errs, tt.wantErr)
			}
			for i := range runs {
				if n := runs[i].Load(); n != 2 {
					t.Errorf("member %d ran %d times, want 2 (in the group, then alone)", i, n)
				}
			}
			after := mustCounts(t, s)
			if after["push_hosts"] != before["push_hosts"]+2 || after["push_sessions"] != before["push_sessions"] {
				t.Errorf("rows %v after %v, want hostA and hostC only", after, before)
			}
			if m, f := members.Swap(0), failed.Swap(0); m != 3 || f != 3 {
				t.Errorf("observed %d members, %d of them failed; want 3 and 3", m, f)
			}
			if err := s.Tx(ctx, func(tx *store.Tx) error { return tx.DeleteHostsForTest(ctx) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSharedHostTxFinalRoundRefused lines up three members that each end
// with a final write, so COMMIT goes in their one round trip; the server
// refuses the middle one's and skips the COMMIT. The group failed, though
// COMMIT reported nothing, and a member that read its row before the
// refusal had its write rolled back: every member runs again alone, the
// other two commit and the middle one returns its own error.
func TestSharedHostTxFinalRoundRefused(t *testing.T) {
	ctx := context.Background()
	s, _, _ := groupStore(t)
	failed := countFailedGroups(s)
	counts := map[string]int64{"hostA": 1, "hostB": 0, "hostC": 3}
	var calls []groupCall
	for _, host := range []string{"hostA", "hostB", "hostC"} {
		calls = append(calls, groupCall{host, func(tx *store.Tx) error {
			_, err := tx.FinalCounter(ctx, host, counts[host])
			return err
		}})
	}
	free := storetest.HoldSlot(t, s)
	wait := queueCalls(t, ctx, s, calls)
	free()
	errs := wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("hostA, hostC: %v, %v; want both committed", errs[0], errs[2])
	}
	if pg, ok := errors.AsType[*pgconn.PgError](errs[1]); !ok || pg.Code != "22012" {
		t.Errorf("hostB: %v, want its division by zero", errs[1])
	}
	if n := failed.Load(); n != 1 {
		t.Errorf("%d shared transactions failed, want 1", n)
	}
	for host, want := range map[string]int64{"hostA": 1, "hostB": 0, "hostC": 3} {
		mustHostTx(t, s, host, func(tx *store.Tx) error {
			got, err := tx.Counter(ctx, host)
			if err == nil && got != want {
				t.Errorf("%s's count is %d, want %d", host, got, want)
			}
			return err
		})
	}
}

// TestSharedHostTxOneHostPerGroup queues two transactions of one host and one
// of another: the host's second waits for the next group, which must see
// what the first committed.
func TestSharedHostTxOneHostPerGroup(t *testing.T) {
	ctx := context.Background()
	s, _, _ := groupStore(t)
	ids := make([]int64, 3)
	free := storetest.HoldSlot(t, s)
	wait := queueCalls(t, ctx, s, []groupCall{
		{"hostA", touchAndTxID(ctx, "hostA", &ids[0])},
		{"hostA", touchAndTxID(ctx, "hostA", &ids[1])},
		{"hostB", touchAndTxID(ctx, "hostB", &ids[2])},
	})
	free()
	mustSucceed(t, wait())
	if ids[0] == ids[1] {
		t.Errorf("hostA's two transactions shared transaction %d", ids[0])
	}
	if ids[2] != ids[0] {
		t.Errorf("hostB ran in transaction %d, hostA's first in %d: want them together", ids[2], ids[0])
	}
}

// TestSharedHostTxNoLostUpdate runs read-then-write increments of six hosts'
// counters from many goroutines through two stores, as two gateway
// instances: whether a host's transactions go alone or in groups, and
// whatever groups the others form, each sees the one before, so no
// increment is lost. The first calls all wait behind a busy slot, so groups
// are sure to form.
func TestSharedHostTxNoLostUpdate(t *testing.T) {
	ctx := context.Background()
	s, opts, _ := groupStore(t)
	other := openAgain(t, opts)
	stores := []*store.Store{s, other}
	const hosts, workers, increments = 6, 3, 20
	var mu sync.Mutex
	members := make(map[int64]int) // transaction id → calls in it
	increment := func(host string) func(*store.Tx) error {
		return func(tx *store.Tx) error {
			n, err := tx.Counter(ctx, host)
			if err != nil {
				return err
			}
			id, err := tx.TxID(ctx)
			if err != nil {
				return err
			}
			mu.Lock()
			members[id]++
			mu.Unlock()
			return tx.SetCounter(ctx, host, n+1)
		}
	}
	free := storetest.HoldSlot(t, s)
	var first []groupCall
	for h := range hosts {
		host := fmt.Sprintf("host%d", h)
		first = append(first, groupCall{host, increment(host)})
	}
	waitFirst := queueCalls(t, ctx, s, first)
	var wg sync.WaitGroup
	errs := make(chan error, hosts*workers)
	for h := range hosts {
		host := fmt.Sprintf("host%d", h)
		for w := range workers {
			wg.Go(func() {
				for i := range increments {
					s := stores[(w+i)%len(stores)]
					if err := s.SharedHostTx(ctx, host, increment(host)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	free()
	for _, err := range waitFirst() {
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for h := range hosts {
		host := fmt.Sprintf("host%d", h)
		var n int64
		if err := s.HostTx(ctx, host, func(tx *store.Tx) error {
			var err error
			n, err = tx.Counter(ctx, host)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if want := int64(1 + workers*increments); n != want {
			t.Errorf("%s counted %d, want %d", host, n, want)
		}
	}
	grouped := 0
	for _, n := range members {
		if n > 1 {
			grouped++
		}
	}
	if grouped == 0 {
		t.Error("no two calls shared a transaction")
	}
	t.Logf("%d transactions, %d of them shared", len(members), grouped)
}

// TestSharedHostTxCancelWhileWaiting cancels a call that waits for a group:
// it returns the context's error at once and its fn never runs.
func TestSharedHostTxCancelWhileWaiting(t *testing.T) {
	s, _, _ := groupStore(t)
	free := storetest.HoldSlot(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	wait := queueCalls(t, ctx, s, []groupCall{{"hostA", func(tx *store.Tx) error {
		ran.Store(true)
		return tx.TouchHost(ctx, "hostA", "key", 1)
	}}})
	cancel()
	answered := make(chan []error, 1)
	go func() { answered <- wait() }()
	select {
	case errs := <-answered:
		if !errors.Is(errs[0], context.Canceled) {
			t.Errorf("SharedHostTx = %v, want context.Canceled", errs[0])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call still waits for a group")
	}
	if s.SharedWaiting() != 0 {
		t.Errorf("%d calls still wait", s.SharedWaiting())
	}
	free()
	if ran.Load() {
		t.Error("the cancelled call's fn ran")
	}
}

// TestSlotsDoNotWaitForAHeldLock holds one host's lock in a store whose
// session waits a minute for a lock, with no statement or idle timeout, and
// that has one slot. A lone call of
// that host, then a group that holds one, gives the slot up within
// slotLockWait and waits for the lock alone: the other hosts' calls behind
// them, and in the group with them, commit while it waits. Waiting in the
// slot, they would wait the minute; the test gives up after ten seconds.
// It runs on a pool of 4, whose slots' transactions set their wait, and of
// 7, whose slots have a pool of their own that waits that long (the slot
// pool's sessions).
func TestSlotsDoNotWaitForAHeldLock(t *testing.T) {
	for _, poolMax := range []int{4, 7} {
		t.Run(fmt.Sprintf("pool of %d", poolMax), func(t *testing.T) { testSlotsDoNotWaitForAHeldLock(t, poolMax) })
	}
}

func testSlotsDoNotWaitForAHeldLock(t *testing.T, poolMax int) {
	ctx := context.Background()
	opts := storetest.PostgresOptions(t)
	u, err := url.Parse(opts.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("lock_timeout", "60000")
	q.Set("statement_timeout", "0")
	q.Set("idle_in_transaction_session_timeout", "0")
	u.RawQuery = q.Encode()
	opts.DatabaseURL, opts.PoolMax = u.String(), poolMax // one slot
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, slots := store.PoolSizes(s); (slots > 0) != (poolMax == 7) {
		t.Fatalf("a pool of %d has a slot pool of %d", poolMax, slots)
	}
	failed := countFailedGroups(s)
	hostX, hostY, hostZ := testHost("hostX"), testHost("hostY"), testHost("hostZ")
	touch := func(host string) func() error {
		return func() error {
			return s.SharedHostTx(ctx, host, func(tx *store.Tx) error { return tx.TouchHost(ctx, host, "key", 1) })
		}
	}
	// answered collects the hosts whose call returned nil.
	answered := make(chan string, 4)
	call := func(host string) func() error {
		return func() error {
			err := touch(host)()
			if err == nil {
				answered <- host
			}
			return err
		}
	}
	receive := func(want string) {
		t.Helper()
		select {
		case got := <-answered:
			if got != want {
				t.Fatalf("%s answered while %s waits for its lock", got, hostX)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s waits behind %s's held lock", want, hostX)
		}
	}

	free := holdHostLock(t, s, hostX)
	lone := make(chan error, 1)
	go func() { lone <- call(hostX)() }()
	waitForLockWaiters(t, storetest.SQL(t, opts), 1, hostX)
	go func() {
		if err := call(hostY)(); err != nil {
			t.Error(err)
		}
	}()
	receive(hostY)
	free()
	if err := <-lone; err != nil {
		t.Fatal(err)
	}
	receive(hostX)

	free = holdHostLock(t, s, hostX)
	freeSlot := storetest.HoldSlot(t, s)
	wait := lineUp(t, s, []func() error{call(hostX), call(hostY), call(hostZ)})
	freeSlot()
	for _, want := range []string{hostY, hostZ} {
		select {
		case got := <-answered:
			if got != hostY && got != hostZ {
				t.Fatalf("%s answered while its lock is held", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s waits in a group behind %s's held lock", want, hostX)
		}
	}
	free()
	mustSucceed(t, wait())
	if n := failed.Load(); n != 1 {
		t.Errorf("%d shared transactions failed, want 1 (the group on the held lock)", n)
	}
}

// TestSlotPool opens stores whose pools can and cannot spare the slots a
// pool of their own, and reads the lock_timeout a transaction sees in a
// slot (SharedHostTx, alone) and outside the slots (HostTx): a slot waits
// slotLockWait and any other transaction the session's lockWait, whichever
// pool it runs on; with a slot pool the slot's wait is its connection's
// own (a startup parameter, source "client"), so its lock statement sets
// none; the two pools hold what PoolMax allows, no more. A slot's wait set
// by its lock statement ends with its transaction, also one of a single
// round trip with no COMMIT of its own: the next transaction on the same
// connection waits the session's.
func TestSlotPool(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		poolMax, slots int
		source         string
	}{{1, 0, "session"}, {4, 0, "session"}, {6, 3, "client"}, {10, 4, "client"}, {40, 4, "client"}} {
		t.Run(fmt.Sprintf("pool of %d", c.poolMax), func(t *testing.T) {
			opts := storetest.PostgresOptions(t)
			opts.PoolMax = c.poolMax
			s, err := store.Open(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			pool, slots := store.PoolSizes(s)
			if slots != c.slots || pool+slots != c.poolMax {
				t.Errorf("pools of %d and %d connections, want a slot pool of %d and %d in all", pool, slots, c.slots, c.poolMax)
			}
			read := func(run func(func(*store.Tx) error) error) (value, source string) {
				t.Helper()
				err := run(func(tx *store.Tx) error {
					var err error
					value, source, err = tx.Setting(ctx, "lock_timeout")
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				return value, source
			}
			host := testHost("hostA")
			value, source := read(func(fn func(*store.Tx) error) error { return s.SharedHostTx(ctx, host, fn) })
			if value != "100ms" || source != c.source {
				t.Errorf("in a slot: lock_timeout %s from %s, want 100ms from %s", value, source, c.source)
			}
			value, _ = read(func(fn func(*store.Tx) error) error { return s.HostTx(ctx, host, fn) })
			if value != "2s" {
				t.Errorf("outside the slots: lock_timeout %s, want 2s", value)
			}
			err = s.SharedHostTx(ctx, host, func(tx *store.Tx) error {
				value, source, err = tx.FinalSetting(ctx, "lock_timeout")
				return err
			})
			if err != nil || value != "100ms" || source != c.source {
				t.Errorf("in a slot, one round trip: lock_timeout %s from %s (%v), want 100ms from %s", value, source, err, c.source)
			}
			value, _ = read(func(fn func(*store.Tx) error) error { return s.HostTx(ctx, host, fn) })
			if value != "2s" {
				t.Errorf("outside the slots after a slot's one round trip: lock_timeout %s, want 2s", value)
			}
		})
	}
}

// TestGroupLocksTakeKeysInOrder runs two groups of the same three hosts on
// two stores, as two instances would, their members in opposite orders,
// while a third transaction holds the lock of the host in the middle. Taken
// in member order, each group would hold one end's lock and wait for the
// other's: a deadlock, which the server breaks by failing one group after
// deadlock_timeout. Taken in key order, they wait for each other in line
// and neither fails.
func TestGroupLocksTakeKeysInOrder(t *testing.T) {
	ctx := context.Background()
	s, opts, _ := groupStore(t)
	other := openAgain(t, opts)
	// The groups wait for the held lock, and for each other, in their
	// slots.
	store.SetSlotLockWait(s, time.Minute)
	store.SetSlotLockWait(other, time.Minute)
	failed := countFailedGroups(s, other)
	db := storetest.SQL(t, opts)
	hostA, hostB, hostC := testHost("hostA"), testHost("hostB"), testHost("hostC")
	touch := func(host string) groupCall {
		return groupCall{host, func(tx *store.Tx) error { return tx.TouchHost(ctx, host, "key", 1) }}
	}
	free := holdHostLock(t, s, hostB)
	var waits []func() []error
	for i, st := range []*store.Store{s, other} {
		calls := []groupCall{touch(hostA), touch(hostB), touch(hostC)}
		if i == 1 {
			slices.Reverse(calls)
		}
		freeSlot := storetest.HoldSlot(t, st)
		waits = append(waits, queueCalls(t, ctx, st, calls))
		freeSlot()
		waitForLockWaiters(t, db, int64(i+1), hostA, hostB, hostC)
	}
	free()
	for _, wait := range waits {
		mustSucceed(t, wait())
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d shared transactions failed, want 0", n)
	}
}

// TestSharedHostTxConnectionLost drops the group's connection at each of its
// round trips. Before COMMIT nothing committed, so each member runs again
// alone and commits. At COMMIT the group may have committed, so each member
// returns the error, as a transaction of its own would, and the rows are
// there exactly when the server got the COMMIT.
func TestSharedHostTxConnectionLost(t *testing.T) {
	ctx := context.Background()
	s, _, rt := groupStore(t)
	n := 0
	group := func() []error {
		t.Helper()
		free := storetest.HoldSlot(t, s)
		var calls []groupCall
		for range 3 {
			n++
			host := fmt.Sprintf("host%d", n)
			var id int64
			calls = append(calls, groupCall{host, touchAndTxID(ctx, host, &id)})
		}
		wait := queueCalls(t, ctx, s, calls)
		free()
		return wait()
	}
	// warm runs groups until one takes two round trips (the statements with
	// BEGIN and the lock, then COMMIT): a connection's first use of a
	// statement costs one more, and a cut connection is replaced.
	warm := func() {
		t.Helper()
		for range 5 {
			before := rt.Load()
			for _, err := range group() {
				if err != nil {
					t.Fatal(err)
				}
			}
			if rt.Load()-before == 2 {
				return
			}
		}
		t.Fatal("a group never took two round trips")
	}
	for _, tt := range []struct {
		trip      int64
		delivered bool
		wantErr   bool
		committed bool
	}{
		{1, false, false, true},
		{1, true, false, true},
		{2, false, true, false},
		{2, true, true, true},
	} {
		warm()
		before := mustCounts(t, s)["push_hosts"]
		rt.Cut(tt.trip, tt.delivered)
		errs := group()
		for i, err := range errs {
			if (err != nil) != tt.wantErr {
				t.Errorf("cut at round trip %d, delivered %v: member %d: %v, want error %v", tt.trip, tt.delivered, i, err, tt.wantErr)
			}
		}
		want := before
		if tt.committed {
			want += 3
		}
		if got := mustCounts(t, s)["push_hosts"]; got != want {
			t.Errorf("cut at round trip %d, delivered %v: push_hosts has %d rows, want %d", tt.trip, tt.delivered, got, want)
		}
	}
}

// insertBatches inserts n due batches of host's registration reg and
// returns their ids.
func insertBatches(t *testing.T, s *store.Store, host, reg string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	mustHostTx(t, s, host, func(tx *store.Tx) error {
		for i := range ids {
			var err error
			ids[i], err = tx.InsertBatch(context.Background(), store.NewBatch{Host: host, RegistrationID: reg,
				Kind: contract.KindAlert, Payload: `[]`, Members: 1, DueAt: 5000, ExpiresAt: 60_000}, 1000)
			if err != nil {
				return err
			}
		}
		return nil
	})
	return ids
}

// holdHostLock takes host's lock in a transaction of its own; the returned
// free commits it.
func holdHostLock(t *testing.T, s *store.Store, host string) (free func()) {
	t.Helper()
	ctx := context.Background()
	return storetest.HoldTx(t, func(fn func(*store.Tx) error) error { return s.HostTx(ctx, host, fn) },
		func(tx *store.Tx) error {
			_, err := tx.TxID(ctx) // its round trip takes the lock
			return err
		})
}

// testHost returns a host name of name's that is this test's own: advisory
// locks are the database's, not the schema's, so tests running beside it
// neither wait for its hosts' locks nor count as their waiters.
func testHost(name string) string {
	var b [4]byte
	rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// waitForLockWaiters waits until n transactions wait for the locks of
// hosts.
func waitForLockWaiters(t *testing.T, db *sql.DB, n int64, hosts ...string) {
	t.Helper()
	storetest.WaitFor(t, func() bool {
		var got int64
		err := db.QueryRow(`SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND ((classid::bigint << 32) | objid::bigint) IN (
				SELECT hashtextextended($1 || h, 0) FROM unnest($2::text[]) AS h)`,
			store.HostLockPrefix, hosts).Scan(&got)
		return err == nil && got == n
	})
}

// TestClaimsShareTransactions lines up claims, in a store with one claim
// slot, behind one that waits for its host's lock: three racing claims of
// one registration's due batches of hostA and one of hostB. While another
// transaction holds hostA's lock they wait for it; then they share one round
// trip and transaction, and each claim sees the one before it: exactly one
// of the registration's batches is leased, and hostB's is.
//
// The round trips are those after the holder lets go (its own COMMIT among
// them). A round whose group lands on a pool connection that has not yet
// prepared the claim's statement makes one more (Parse/Describe), which
// pool's choice of connection decides: the fewest of the rounds after the
// first is held to 1 (claims that did not share would make 4 in every
// round), instead of the last round's alone, which read 2 in one CI run.
func TestClaimsShareTransactions(t *testing.T) {
	ctx := context.Background()
	s, opts, rt := groupStore(t)
	// The first claim holds the slot while it waits for hostC's lock, and
	// the group waits for hostA's.
	store.SetSlotLockWait(s, time.Minute)
	db := storetest.SQL(t, opts)
	hostA, hostB, hostC := testHost("hostA"), testHost("hostB"), testHost("hostC")
	waiters := func(host string, n int64) {
		t.Helper()
		waitForLockWaiters(t, db, n, host)
	}
	fewest := int64(-1)
	for round := range 4 { // the first prepares the statements on a connection
		regA := mustDevice(t, s, hostA, fmt.Sprintf("phone%d", round))
		regB := mustDevice(t, s, hostB, fmt.Sprintf("phone%d", round))
		blocked := insertBatches(t, s, hostC, mustDevice(t, s, hostC, fmt.Sprintf("phone%d", round)), 1)[0]
		ids := append(insertBatches(t, s, hostA, regA, 3), insertBatches(t, s, hostB, regB, 1)...)
		claim := func(id string) (store.Claim, error) {
			return s.ClaimBatch(ctx, id, "lease-"+id, fixtureNow, fixtureNow+30_000, "deadline")
		}
		freeC := holdHostLock(t, s, hostC)
		first := make(chan error, 1)
		go func() {
			_, err := claim(blocked)
			first <- err
		}()
		waiters(hostC, 1) // the first claim has the slot
		claims := make([]store.Claim, len(ids))
		var fns []func() error
		for i, id := range ids {
			fns = append(fns, func() error {
				var err error
				claims[i], err = claim(id)
				return err
			})
		}
		wait := lineUp(t, s, fns)
		freeA := holdHostLock(t, s, hostA)
		freeC()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		waiters(hostA, 1) // the group waits for hostA's lock
		before := rt.Load()
		freeA()
		mustSucceed(t, wait())
		trips := rt.Load() - before
		leased := 0
		for _, c := range claims[:3] {
			if c.Leased {
				leased++
			}
		}
		if leased != 1 || !claims[3].Leased {
			t.Errorf("round %d: %d of the registration's 3 batches leased and hostB's %v, want 1 and true",
				round, leased, claims[3].Leased)
		}
		if round > 0 && (fewest < 0 || trips < fewest) {
			fewest = trips
		}
	}
	if fewest != 1 {
		t.Errorf("four claims took at least %d round trips together in each round, want 1", fewest)
	}
}

// TestOutcomesShareTransactions lines up delivery outcomes, in a store with
// one outcome slot, behind one whose row another transaction holds: two
// leased batches of two registrations, one with a due sibling. They share
// one transaction, each ends its batch, and the sibling is woken.
func TestOutcomesShareTransactions(t *testing.T) {
	ctx := context.Background()
	s, opts, _ := groupStore(t)
	db := storetest.SQL(t, opts)
	regs := []string{mustDevice(t, s, "hostA", "phone"), mustDevice(t, s, "hostB", "phone"), mustDevice(t, s, "hostC", "phone")}
	var held []string
	for i, reg := range regs {
		ids := insertBatches(t, s, []string{"hostA", "hostB", "hostC"}[i], reg, 2)
		if err := s.Tx(ctx, func(tx *store.Tx) error {
			_, err := tx.LeaseBatch(ctx, ids[0], "holder", fixtureNow+30_000)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// The sibling's claim finds it held back, so the end hands on to it.
		if c, err := s.ClaimBatch(ctx, ids[1], "sibling", fixtureNow, fixtureNow+30_000, "deadline"); err != nil || c.Leased {
			t.Fatalf("sibling's claim = %+v, %v; want held back", c, err)
		}
		held = append(held, ids[0])
	}
	lock, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`SELECT 1 FROM push_delivery_batches WHERE batch_id = $1 FOR UPDATE`, held[0]); err != nil {
		t.Fatal(err)
	}
	// Waits for this transaction are told apart from those of the tests
	// running beside it by its id.
	var xid string
	if err := lock.QueryRow(`SELECT transactionid::text FROM pg_locks
		WHERE pid = pg_backend_pid() AND locktype = 'transactionid' AND granted`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, _, err := s.EndLeasedBatch(ctx, held[0], "hostA", regs[0], "holder", store.BatchSent, "", fixtureNow, store.ReadHeldBack)
		first <- err
	}()
	storetest.WaitFor(t, func() bool {
		var n int64
		err := db.QueryRow(`SELECT COUNT(*) FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted
			AND transactionid::text = $1`, xid).Scan(&n)
		return err == nil && n == 1
	})
	ended, woken := make([]bool, 2), make([][]string, 2)
	var fns []func() error
	for i := range 2 {
		fns = append(fns, func() error {
			var err error
			// One probes for its sibling and takes it after the group, one
			// takes it in the group.
			how := []store.HeldBack{store.ReadHeldBack, store.MarkHeldBack}[i]
			ended[i], woken[i], err = s.EndLeasedBatch(ctx, held[i+1], []string{"hostB", "hostC"}[i], regs[i+1], "holder", store.BatchSent, "", fixtureNow, how)
			return err
		})
	}
	wait := lineUp(t, s, fns)
	if err := lock.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, wait())
	for i := range 2 {
		if !ended[i] || len(woken[i]) != 1 {
			t.Errorf("outcome %d: ended %v, woke %v; want ended and its sibling woken", i, ended[i], woken[i])
		}
		if b := mustBatch(t, s, held[i+1]); b.State != store.BatchSent {
			t.Errorf("batch %d is %s, want sent", i, b.State)
		}
	}
}

// TestGroupLockPlans: the lock statement of a group of sends reads no table.
// A prepared statement runs on a generic plan, made once for any parameter
// values and kept as long as its connection lives; a lock statement that
// also read the hosts of the batches it was given (none, for sends) had,
// when planned while the batch table was small, a scan of that whole table
// in its generic plan, which every group of sends then ran while the table
// grew to a day of batches.
func TestGroupLockPlans(t *testing.T) {
	conn := planConn(t)
	// A small table, analyzed: the state of a fresh deployment's.
	for _, q := range []string{
		`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id, kind, payload_json,
			members, state, due_at, expires_at, created_at)
			SELECT 'b' || i, 'h' || i, 'r' || i, 'alert', '[]', 1, 'pending', 1, 2, 1 FROM generate_series(1, 20) i`,
		`ANALYZE push_delivery_batches`,
	} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
	}
	plan := storetest.Plan(t, conn, "send_locks", store.GroupLockQuery([]string{"hostA", "hostB"}), `'p', '{hostA,hostB}', '100ms'`)
	if strings.Contains(plan, "push_delivery_batches") {
		t.Errorf("the generic plan of a send group's lock statement reads the batch table:\n%s", plan)
	}
}
