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
// and checks the shapes its instruction counts rest on (startSendStmt):
// the quota's count scans its index and reads the rows, not the index only;
// the registrations are read once; the event's insert has no conflict
// clause to resolve.
func TestStartSendPlan(t *testing.T) {
	conn := planConn(t)
	for _, c := range []struct {
		name           string
		dismiss, lease bool
		stmt           string
	}{{"alert", false, false, "alert"}, {"alert with a lease", false, true, "leased"}, {"dismissal", true, false, "dismissal"}} {
		t.Run(c.name, func(t *testing.T) {
			p := explain(t, conn, c.stmt, store.StartSendQuery(c.dismiss, c.lease),
				`'e', 1, 'h', 'ep', 'n', 1, 'alert', 'f', '{r}', 't', 2, 0, 300, '{b}', 'f'`)
			if !strings.Contains(p, "Index Scan using push_events_quota") || strings.Contains(p, "Index Only Scan using push_events_quota") {
				t.Errorf("the quota's count does not scan its index and read the rows:\n%s", p)
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
// test's own, and returns a connection to it on which every prepared
// statement runs on its generic plan, as a long-lived connection's soon
// does.
func planConn(t *testing.T) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	opts := storetest.PostgresOptions(t)
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := storetest.SQL(t, opts).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	return conn
}

// explain prepares query as name on conn and returns its plan for args,
// the parameters' literals.
func explain(t *testing.T, conn *sql.Conn, name, query, args string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+query); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE `+name+`(`+args+`)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}
