package store

import (
	"context"
	"time"
)

// TxID returns the id of t's transaction: members of one group share it.
func (t *Tx) TxID(ctx context.Context) (int64, error) {
	var id int64
	err := t.r.queryRow(ctx, `SELECT txid_current()`).Scan(&id)
	return id, err
}

// Counter reads host's count in the test table group_counters (a missing
// row reads 0).
func (t *Tx) Counter(ctx context.Context, host string) (int64, error) {
	var n int64
	err := t.r.queryRow(ctx, `SELECT COALESCE((SELECT n FROM group_counters WHERE host = $1), 0)`, host).Scan(&n)
	return n, err
}

// SetCounter writes host's count in group_counters, as a later write.
func (t *Tx) SetCounter(ctx context.Context, host string, n int64) error {
	return t.later(ctx, "set counter", `INSERT INTO group_counters (host, n) VALUES ($1, $2)
		ON CONFLICT (host) DO UPDATE SET n = excluded.n`, host, n)
}

// FinalCounter ends t with one write, its final statement: it sets host's
// count in group_counters to n and returns it; with n 0 the server refuses
// it (division by zero).
func (t *Tx) FinalCounter(ctx context.Context, host string, n int64) (int64, error) {
	var got int64
	err := t.r.final(ctx, `INSERT INTO group_counters (host, n)
		VALUES ($1, $2 / CASE WHEN $2 = 0 THEN 0 ELSE 1 END)
		ON CONFLICT (host) DO UPDATE SET n = excluded.n RETURNING n`, host, n).Scan(&got)
	return got, err
}

// DivideByZero runs a statement the server fails.
func (t *Tx) DivideByZero(ctx context.Context) error {
	_, err := t.r.exec(ctx, `SELECT 1 / 0`)
	return err
}

// DeleteHostsForTest deletes every host row, as a later write.
func (t *Tx) DeleteHostsForTest(ctx context.Context) error {
	return t.later(ctx, "delete hosts", `DELETE FROM push_hosts`)
}

// HostLockPrefix namespaces the host locks' keys.
const HostLockPrefix = hostLockPrefix

// SetSlotLockWait sets how long s's transactions in a combiner's slot wait
// for a lock (slotLockWait): a test that holds a slot with a call waiting
// for a lock sets it longer than the test. Call it before any call of s.
func SetSlotLockWait(s *Store, d time.Duration) {
	for _, c := range []*combiner{s.groups, s.claims, s.outcomes} {
		c.lockWait = lockTimeout(d)
	}
}

// GroupLockQuery returns the text of the lock statement of a group of sends
// by hosts.
func GroupLockQuery(hosts []string) string {
	var calls []*groupCall
	for _, h := range hosts {
		calls = append(calls, &groupCall{on: lockOn{host: h}})
	}
	return groupLocks(calls, "100ms")[0].query
}

// StartSendQuery returns the text of the statement that starts a send on
// PostgreSQL (startSendStmt): for an alert with a session that may join an
// open batch, deciding its quota in mode, or a dismissal, with or without a
// lease's columns.
func StartSendQuery(dismiss, lease bool, mode QuotaMode) string {
	return startSendTexts[sendText{dismiss: dismiss, lease: lease, plain: dismiss, quota: mode}]
}

// Setting reads, in t, the value of PostgreSQL's setting name and where
// it came from (pg_settings.source: "client" for a connection's startup
// parameter, "session" for one set in the session or the transaction).
func (t *Tx) Setting(ctx context.Context, name string) (value, source string, err error) {
	err = t.r.queryRow(ctx, `SELECT current_setting($1), source FROM pg_settings WHERE name = $1`, name).Scan(&value, &source)
	return value, source, err
}

// FinalSetting is Setting as the transaction's final statement: on
// PostgreSQL, in a transaction of one round trip, without BEGIN or COMMIT
// (pipeline).
func (t *Tx) FinalSetting(ctx context.Context, name string) (value, source string, err error) {
	err = t.r.final(ctx, `SELECT current_setting($1), source FROM pg_settings WHERE name = $1`, name).Scan(&value, &source)
	return value, source, err
}

// PoolSizes returns the most connections of s's PostgreSQL pools: the
// pool's and the slot pool's (0 without one).
func PoolSizes(s *Store) (pool, slots int) {
	d := s.dialect.(postgresDialect)
	if d.slots != nil {
		slots = int(d.slots.Config().MaxConns)
	}
	return int(d.pool.Config().MaxConns), slots
}

// BatchKeyAt is batchKeyAt, the text batch keys made at ms or later sort
// after.
var BatchKeyAt = batchKeyAt

// CutOffSilentAfter is CutOffSilent for sessions silent for more than
// silentFor.
func (s *Store) CutOffSilentAfter(ctx context.Context, silentFor time.Duration) (int64, error) {
	return s.cutOffSilent(ctx, silentFor)
}
