package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestPushCostInputs measures the inputs of infra/README.md's cost model
// ("Capacity and cost") that the emulator can give, on PostgreSQL, for
// quiet pushes (one host sending one alert at a time, each to one of a few
// phones, the clock moving a second between pushes) with no coalescing:
// delivered inline (production's setting), the same right after a
// checkpoint, and through a task. It logs, per
// push:
//   - the bytes to and from PostgreSQL, through storetest's counting proxy
//     (the protocol's bytes, without TLS or TCP/IP headers);
//   - the WAL written: the server's LSN difference over the pushes, which
//     holds every session's writes on a shared server, and the WAL records
//     of this test's schema alone (pg_walinspect: records touching its
//     relations and every record of the transactions that wrote them);
//   - the bytes the gateway wrote to stdout (the counters lines, and any
//     other line);
//   - how long the send (and deliver) requests were open with the
//     stand-ins answering at once: the gateway's own part of the time Cloud
//     Run bills, to which the providers' round trip adds.
//
// It asserts only loose bounds, never a time. Run it as
//
//	go test -count=1 -v -run TestPushCostInputs ./scripts/emulator
func TestPushCostInputs(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		// checkpoint runs a CHECKPOINT just before the pushes: the first
		// change of each page after one writes the page's full image.
		checkpoint bool
	}{
		{"inline", []string{"ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_DELIVER_INLINE=1"}, false},
		{"inline_after_checkpoint", []string{"ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_DELIVER_INLINE=1"}, true},
		{"task", []string{"ORCA_PUSH_COALESCE_MS=0"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, rt := storetest.CountingPostgres(t)
			wal := newWALMeter(t, opts)
			var stdout lineCounter
			var open openTimes
			d := storetest.Dialect{Name: "postgres", Options: func(testing.TB) store.Options { return opts }}
			e := startEmuServing(t, d, queueOptions{}, &stdout, open.wrap, tt.env...)
			const phones, pushes = 10, 120
			var regs []string
			for i := range phones {
				reg, _ := e.registerPhone(fmt.Sprint("phone-", i))
				regs = append(regs, reg)
			}
			// One push first, so that the measured ones find the pool's
			// connections open and the statements prepared, as a warm
			// instance does.
			e.sendTo(alert("warm", 1), regs[0])
			e.call("POST", "/_emulator/tasks/run-due", "", nil)
			delivered0 := e.delivered()
			if tt.checkpoint {
				if _, err := wal.db.Exec("CHECKPOINT"); err != nil {
					t.Fatal(err)
				}
			}
			sent0, recv0 := rt.Bytes()
			wal.start()
			stdout.reset()
			open.reset()
			for i := range pushes {
				e.clk.Advance(time.Second)
				e.sendTo(alert(fmt.Sprint("n", i), int64(i+2)), regs[i%phones])
				if tt.name == "task" {
					e.call("POST", "/_emulator/tasks/run-due", "", nil)
				}
			}
			sent1, recv1 := rt.Bytes()
			raw, ours, fpi := wal.stop()
			if got := e.delivered() - delivered0; got != pushes {
				t.Fatalf("%d pushes delivered, want %d", got, pushes)
			}
			n := float64(pushes)
			t.Logf("%s, %d pushes: PostgreSQL %.0f B sent and %.0f B received per push", tt.name, pushes,
				float64(sent1-sent0)/n, float64(recv1-recv0)/n)
			t.Logf("%s: WAL per push %.0f B of this schema's records (%.0f B of them full-page images); the server's LSN moved %.0f B per push (every session's)",
				tt.name, float64(ours)/n, float64(fpi)/n, float64(raw)/n)
			lines, outBytes, counterLines, counterBytes := stdout.counts()
			t.Logf("%s: stdout %.1f B per push (%d lines, %d B; counters lines %d, %d B, a clock second between pushes)",
				tt.name, float64(outBytes)/n, lines, outBytes, counterLines, counterBytes)
			for _, path := range open.paths() {
				s := open.summary(path)
				t.Logf("%s: %s open %s", tt.name, path, s)
			}
			// Loose bounds: a push is a few round trips of at most a few
			// KB, and it writes WAL.
			if per := (sent1 - sent0) / pushes; per < 200 || per > 50_000 {
				t.Errorf("%d B sent to PostgreSQL per push, want 200..50,000", per)
			}
			if per := (recv1 - recv0) / pushes; per < 50 || per > 50_000 {
				t.Errorf("%d B received from PostgreSQL per push, want 50..50,000", per)
			}
			if per := ours / pushes; per < 100 || per > 100_000 {
				t.Errorf("%d B of WAL per push, want 100..100,000", per)
			}
			if per := outBytes / pushes; per > 100 {
				t.Errorf("%d B of stdout per push, want at most 100 (a line per push would be more)", per)
			}
		})
	}
}

// delivered counts the deliveries the stand-ins accepted.
func (e *emu) delivered() int {
	e.t.Helper()
	n := 0
	for _, d := range e.inbox() {
		if d.Status == http.StatusOK {
			n++
		}
	}
	return n
}

// lineCounter counts what the gateway writes to stdout, in lines and bytes,
// the counters lines apart.
type lineCounter struct {
	// mu guards the fields below.
	mu                         sync.Mutex
	lines, bytes               int
	counterLines, counterBytes int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for line := range bytes.Lines(p) {
		c.lines++
		c.bytes += len(line)
		if bytes.Contains(line, []byte(`"orca_push_counters"`)) {
			c.counterLines++
			c.counterBytes += len(line)
		}
	}
	return len(p), nil
}

func (c *lineCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines, c.bytes, c.counterLines, c.counterBytes = 0, 0, 0, 0
}

func (c *lineCounter) counts() (lines, bytes, counterLines, counterBytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines, c.bytes, c.counterLines, c.counterBytes
}

// openTimes notes how long each request to a function was open, in real
// time, by function path: from the handler's start to the end of its
// answer.
type openTimes struct {
	// mu guards d.
	mu sync.Mutex
	d  map[string][]time.Duration
}

func (o *openTimes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		took := time.Since(start)
		if r.URL.Path != "/v1/send" && r.URL.Path != deliverPath {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.d == nil {
			o.d = map[string][]time.Duration{}
		}
		o.d[r.URL.Path] = append(o.d[r.URL.Path], took)
	})
}

func (o *openTimes) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.d = nil
}

func (o *openTimes) paths() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for p := range o.d {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// summary is the count, median, 90th percentile and mean of path's times.
func (o *openTimes) summary(path string) string {
	o.mu.Lock()
	d := slices.Clone(o.d[path])
	o.mu.Unlock()
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return fmt.Sprintf("%d requests: median %v, p90 %v, mean %v", len(d),
		d[len(d)/2].Round(10*time.Microsecond), d[len(d)*9/10].Round(10*time.Microsecond),
		(sum / time.Duration(len(d))).Round(10*time.Microsecond))
}

// walMeter measures the WAL written between start and stop, on its own
// connection straight to the server (not through the counting proxy).
type walMeter struct {
	t      *testing.T
	db     *sql.DB
	schema string
	ns     string // pg_walinspect's schema
	lsn    string
}

func newWALMeter(t *testing.T, proxied store.Options) *walMeter {
	t.Helper()
	u, err := url.Parse(proxied.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	base, err := url.Parse(storetest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	u.Host = base.Host
	db := storetest.SQL(t, store.Options{DatabaseURL: u.String()})
	// In the test's schema, so that it goes when the schema is dropped,
	// unless a database already has it.
	if _, err := db.Exec("CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA " + schema); err != nil {
		t.Fatalf("pg_walinspect: %v", err)
	}
	m := &walMeter{t: t, db: db, schema: schema}
	if err := db.QueryRow(`SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_walinspect'`).
		Scan(&m.ns); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *walMeter) start() {
	m.t.Helper()
	if err := m.db.QueryRow(`SELECT pg_current_wal_lsn()::text`).Scan(&m.lsn); err != nil {
		m.t.Fatal(err)
	}
}

// stop returns the server's LSN difference since start (every session's
// WAL), the bytes of the WAL records of the test's schema (records that
// touch its tables, indexes or TOAST, and every record of a transaction
// that wrote one of those), and how many of those bytes are full-page
// images. Commits are flushed before they answer, so the flush LSN covers
// every push's transactions.
func (m *walMeter) stop() (raw, ours, fpi int64) {
	m.t.Helper()
	var end string
	if err := m.db.QueryRow(`SELECT pg_current_wal_flush_lsn()::text`).Scan(&end); err != nil {
		m.t.Fatal(err)
	}
	if err := m.db.QueryRow(`SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`, end, m.lsn).Scan(&raw); err != nil {
		m.t.Fatal(err)
	}
	q := strings.ReplaceAll(`
WITH rels AS (
  SELECT c.relfilenode FROM pg_class c WHERE c.relnamespace = $3::regnamespace AND c.relfilenode <> 0
  UNION SELECT t.relfilenode FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid WHERE c.relnamespace = $3::regnamespace
  UNION SELECT i.relfilenode FROM pg_class c JOIN pg_index x ON x.indrelid = c.reltoastrelid JOIN pg_class i ON i.oid = x.indexrelid
    WHERE c.relnamespace = $3::regnamespace),
r AS (SELECT * FROM NS.pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
touched AS (SELECT DISTINCT r.start_lsn, r.xid::text AS xid FROM r, regexp_matches(coalesce(r.block_ref, ''), 'rel \d+/\d+/(\d+)', 'g') m
  WHERE m[1]::oid IN (SELECT relfilenode FROM rels))
SELECT coalesce(sum(record_length), 0)::bigint, coalesce(sum(fpi_length), 0)::bigint FROM r
WHERE start_lsn IN (SELECT start_lsn FROM touched)
   OR (xid::text <> '0' AND xid::text IN (SELECT xid FROM touched WHERE xid <> '0'))`, "NS.", m.ns+".")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.db.QueryRowContext(ctx, q, m.lsn, end, m.schema).Scan(&ours, &fpi); err != nil {
		m.t.Fatalf("WAL records: %v", err)
	}
	return raw, ours, fpi
}
