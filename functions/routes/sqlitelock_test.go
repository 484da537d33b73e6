package routes_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// holdEnv names the SQLite data directory whose write lock
// TestHelperHoldSQLiteLock takes.
const holdEnv = "ORCA_PUSH_TEST_HOLD_SQLITE_DIR"

// TestHelperHoldSQLiteLock is not a test of its own: run by
// mustHoldSQLiteLock as a second process (the test binary again), it takes
// the write lock of the SQLite database in $ORCA_PUSH_TEST_HOLD_SQLITE_DIR
// with BEGIN IMMEDIATE, prints "locked" and holds the lock until its stdin
// closes.
func TestHelperHoldSQLiteLock(t *testing.T) {
	dir := os.Getenv(holdEnv)
	if dir == "" {
		t.Skip("the second process of TestSQLiteLockOfAnotherProcessIs503")
	}
	ctx := context.Background()
	conn, err := storetest.SQL(t, store.Options{DataDir: dir}).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	io.Copy(io.Discard, os.Stdin)
}

// mustHoldSQLiteLock starts a second process that holds the write lock of
// the SQLite database in dir, and returns when it holds it. release ends
// the process; it also runs when t ends.
func mustHoldSQLiteLock(t *testing.T, dir string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldSQLiteLock$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	release = func() { stdin.Close(); cmd.Wait() }
	t.Cleanup(release)
	locked := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if lines.Text() == "locked" {
				locked <- true
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case <-locked:
	case <-time.After(30 * time.Second): // a process boundary
		t.Fatal("the second process did not take the lock")
	}
	return release
}

// TestSQLiteLockOfAnotherProcessIs503: while a second process holds
// SQLite's write lock, /v1/send is answered 503 busy with Retry-After 1 after
// the 2 s lock wait that PostgreSQL's host lock has, well within the 5 s
// the request is given, and changes nothing; once the lock is free the same
// send is queued. SQLite's busy timeout of 10 s, taken three times, kept it
// waiting 30 s (issue 26 §4).
func TestSQLiteLockOfAnotherProcessIs503(t *testing.T) {
	d := storetest.Dialects(t)[0]
	if d.Name != "sqlite" {
		t.Fatalf("first dialect %s, want sqlite", d.Name)
	}
	opts := d.Options(t)
	g := mustGatewayOn(t, opts)
	h := g.mustHost(t)
	token := mustSignIn(t, h)
	reg, err := h.Register(context.Background(), android("phone"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(opts.DataDir, store.SQLiteFile)); err != nil {
		t.Fatal(err)
	}
	send := `{"v":1,"registrationIds":["` + reg + `"],"notification":` + contractNotification + `}`
	before := g.rowCounts(t)
	g.svc.Counters.Consume()
	release := mustHoldSQLiteLock(t, opts.DataDir)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", g.srv.URL+"/v1/send", strings.NewReader(send))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("send while another process holds the write lock: %v, want 503 busy within the lock wait", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(string(b)) != `{"error":"busy"}` ||
		resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("send while another process holds the write lock = %d %s, Retry-After %q; want 503 busy, Retry-After 1",
			resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if got := g.svc.Counters.Consume(); got[obs.DatabaseBusy] != 1 || got[obs.RequestError] != 0 {
		t.Errorf("counters %v, want database_busy 1 and no request_error", got)
	}
	release()
	g.mustUnchanged(t, before)
	if status, body := g.do(t, "POST", "/v1/send", send, bearerHeader(token)); status != 200 ||
		body != `{"results":[{"registrationId":"`+reg+`","status":"queued"}]}` {
		t.Fatalf("send after the lock = %d %s", status, body)
	}
}
