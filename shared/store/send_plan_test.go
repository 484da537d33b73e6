package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestStartSendPlan reads the generic plan of the statement that starts a
// send on PostgreSQL, for each kind, with and without a lease's columns,
// and each way of deciding an alert's quota, and checks the shapes its
// instruction counts rest on (startSendStmt): a count scans the quota's
// index and reads the rows, not the index only; the ring is read and
// updated with the session's row, by its key and then its row version,
// with no scan of the host's events; the registrations are read once; the
// event's insert has no conflict clause to resolve.
func TestStartSendPlan(t *testing.T) {
	conn := planConn(t)
	for _, c := range []struct {
		name           string
		dismiss, lease bool
		mode           store.QuotaMode
		stmt           string
	}{
		{"alert", false, false, store.QuotaCount, "alert"}, {"alert with a lease", false, true, store.QuotaCount, "leased"},
		{"alert by the ring", false, false, store.QuotaRing, "ring"}, {"alert by the ring with a lease", false, true, store.QuotaRing, "ringleased"},
		{"alert rebuilding the ring", false, false, store.QuotaRebuild, "rebuild"}, {"dismissal", true, false, store.QuotaCount, "dismissal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := storetest.Plan(t, conn, c.stmt, store.StartSendQuery(c.dismiss, c.lease, c.mode),
				`'e', 1, 'h', 'ep', 'n', 1, 'alert', 'f', '{r}', 't', 2, 0, 300, '{b}', 'f'`)
			ring := c.mode == store.QuotaRing
			counts := !ring && c.mode != store.QuotaRebuild // the rebuild, once per busy spell, may read the index only
			if counts && (!strings.Contains(p, "Index Scan using push_events_quota") || strings.Contains(p, "Index Only Scan using push_events_quota")) {
				t.Errorf("the quota's count does not scan its index and read the rows:\n%s", p)
			}
			if ring && strings.Contains(p, "push_events_quota") {
				t.Errorf("the ring's send reads the host's events:\n%s", p)
			}
			if ring && (!strings.Contains(p, "Update on push_sessions") || !strings.Contains(p, "Tid Scan on push_sessions") ||
				strings.Count(p, "Index Scan using push_sessions_") != 1) {
				t.Errorf("the session's ring is not read by a key and updated by its row version:\n%s", p)
			}
			if n := strings.Count(p, "on push_devices"); n != 1 {
				t.Errorf("the registrations are read %d times, want once:\n%s", n, p)
			}
			if strings.Contains(p, "Arbiter Indexes: push_events_pkey") {
				t.Errorf("the event's insert resolves conflicts:\n%s", p)
			}
		})
	}
}

// planConn opens a store on PostgreSQL, which migrates a schema of the
// test's own, and returns a connection to it that reads generic plans
// (storetest.PlanConn).
func planConn(t *testing.T) *sql.Conn {
	t.Helper()
	opts := storetest.PostgresOptions(t)
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return storetest.PlanConn(t, opts)
}

// TestSQLitePendingIndexes holds that SQLite reads a registration's pending
// batches and the sweep's by their partial indexes, which migration 0012
// leaves as they were on SQLite: its planner picks an index by rules, and
// some versions take IS NOT NULL of a NOT NULL column for true and then
// match no statement to an index that names it (Debian's sqlite3 3.40 read
// the table for every one; the embedded SQLite does match them).
func TestSQLitePendingIndexes(t *testing.T) {
	opts := store.Options{DataDir: t.TempDir()}
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db := storetest.SQL(t, opts)
	for _, c := range []struct{ name, query, index string }{
		{"a registration's", `SELECT 1 FROM push_delivery_batches
			WHERE registration_id = ? AND state = 'pending' AND lease_until > ?`, "push_delivery_batches_pending"},
		{"lost", `SELECT batch_id FROM push_delivery_batches
			WHERE state = 'pending' AND registration_id IS NOT NULL AND due_at <= ? AND lease_until <= ?
				AND scheduled_at <= ? AND expires_at > ?
			ORDER BY due_at LIMIT ?`, "push_delivery_batches_pending_due"},
		{"overdue", `SELECT batch_id FROM push_delivery_batches
			WHERE state = 'pending' AND registration_id IS NOT NULL AND scheduled_at >= 0
				AND due_at <= ? AND expires_at <= ? AND lease_until <= ?
			LIMIT ?`, "push_delivery_batches_pending_due"},
	} {
		args := make([]any, strings.Count(c.query, "?"))
		for i := range args {
			args[i] = i
		}
		rows, err := db.Query(`EXPLAIN QUERY PLAN `+c.query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(detail + "\n")
		}
		rows.Close()
		// A SEARCH, with a condition on the index's key: a SCAN of a
		// partial index reads every row it holds.
		if !strings.Contains(plan.String(), "SEARCH push_delivery_batches USING INDEX "+c.index+" (") {
			t.Errorf("%s batches are not searched by %s:\n%s", c.name, c.index, plan.String())
		}
	}
}

// TestKeysCompareByBytes holds that every text column of a PostgreSQL index
// of the gateway's tables is in the C collation (migration 0015): its
// comparisons then skip strcoll, and a comparison of two columns in
// different collations would keep neither's index.
func TestKeysCompareByBytes(t *testing.T) {
	opts := storetest.PostgresOptions(t)
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rows, err := storetest.SQL(t, opts).Query(`SELECT DISTINCT c.relname, a.attname, COALESCE(l.collname, '')
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey)
		LEFT JOIN pg_collation l ON l.oid = a.attcollation
		WHERE c.relname LIKE 'push\_%' AND c.relname <> 'push_schema_migrations' AND a.atttypid = 'text'::regtype`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var table, column, collation string
		if err := rows.Scan(&table, &column, &collation); err != nil {
			t.Fatal(err)
		}
		n++
		if collation != "C" {
			t.Errorf("%s.%s, in an index, is in collation %q, want C", table, column, collation)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Fatalf("%d indexed text columns found, want at least 15", n)
	}
}
