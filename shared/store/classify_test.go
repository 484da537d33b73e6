package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestClassifySQLite: SQLite's busy and locked codes, as the driver reports
// them, are ErrBusy (503 busy, Retry-After 1), and another SQLite error is
// left for a 500 (issue 26 §5: dropping the SQLite case of Classify survived
// every test).
func TestClassifySQLite(t *testing.T) {
	ctx := context.Background()
	d := storetest.Dialects(t)[0]
	if d.Name != "sqlite" {
		t.Fatalf("first dialect %s, want sqlite", d.Name)
	}
	opts := d.Options(t)
	storetest.Open(t, d) // creates the file and its tables
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(opts.DataDir, store.SQLiteFile)+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		db.SetMaxOpenConns(1)
		return db
	}
	mustConn := func(db *sql.DB) *sql.Conn {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	// Busy: another connection holds the write lock.
	holder := mustConn(open())
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, busy := mustConn(open()).ExecContext(ctx, "BEGIN IMMEDIATE")
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}

	// Locked: a table dropped while the same connection still reads it.
	c := mustConn(open())
	if _, err := c.ExecContext(ctx, "CREATE TEMP TABLE t (x); INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	rows, err := c.QueryContext(ctx, "SELECT x FROM t")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	_, locked := c.ExecContext(ctx, "DROP TABLE t")
	rows.Close()

	_, syntax := c.ExecContext(ctx, "SELEKT 1")

	tests := []struct {
		name     string
		err      error
		code     int
		wantBusy bool
	}{
		{"busy", busy, sqlite3.SQLITE_BUSY, true},
		{"locked", locked, sqlite3.SQLITE_LOCKED, true},
		{"syntax", syntax, sqlite3.SQLITE_ERROR, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *sqlite.Error
			if !errors.As(tt.err, &e) || e.Code()&0xff != tt.code {
				t.Fatalf("the driver's error is %v, want SQLite code %d", tt.err, tt.code)
			}
			got := store.Classify(tt.err)
			if busy := errors.Is(got, store.ErrBusy) && errors.Is(got, contract.ErrBusy); busy != tt.wantBusy {
				t.Errorf("Classify(%v) is busy: %v, want %v", tt.err, busy, tt.wantBusy)
			}
			if !errors.As(got, &e) {
				t.Errorf("Classify(%v) lost the driver's error", tt.err)
			}
		})
	}
}
