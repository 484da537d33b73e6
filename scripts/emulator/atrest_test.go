package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// Markers of a pending alert's text: none may be found at rest.
var atRestMarkers = []string{"MkTitleXq7", "MkBodyZq9", "MkPaneWq3", "MkWorktreeVq5", "MkHostUq1"}

// TestTextSealedAtRest: while an alert waits in its coalescing window, its
// title, body, paneKey, worktreeId and executionHost are in none of the
// SQLite files (the database, its -wal and -shm) and in no pg_dump of the
// PostgreSQL schema, where the registration's device id, stored in the
// clear, is found; the emulator's key files are 0600. After the process is
// killed and another starts on the same data, the alert is delivered with
// its text, and the host's resend is the same event. Both databases, manual
// clock.
func TestTextSealedAtRest(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"ORCA_PUSH_MANUAL_CLOCK=1", "ORCA_PUSH_DATA_DIR=" + dir}
			var dbURL string
			if d.Name == "postgres" {
				dbURL = d.Options(t).DatabaseURL
				env = append(env, "ORCA_PUSH_DATABASE_URL="+dbURL)
			}
			p1 := startEmulator(t, env...)
			ctx := context.Background()
			kp, _ := hostclient.GenerateKeypair(rand.Reader)
			h, err := hostclient.New(hostclient.Options{BaseURL: p1.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
			if err != nil {
				t.Fatal(err)
			}
			reg, err := h.Register(ctx, hostclient.RegisterParams{DeviceID: "MkDeviceClearq", Platform: contract.PlatformAndroid,
				Token: strings.Repeat("f", 40)})
			if err != nil {
				t.Fatal(err)
			}
			n := contract.Notification{NotificationID: "n1", Seq: 1, Epoch: "e", Source: contract.SourceAgentTaskComplete,
				AgentState: contract.AgentFinished, Title: atRestMarkers[0], Body: atRestMarkers[1], PaneKey: atRestMarkers[2],
				WorktreeID: atRestMarkers[3], ExecutionHost: contract.ExecutionHostPrefix + atRestMarkers[4]}
			if res, err := h.Send(ctx, []string{reg}, n); err != nil || res[0].Status != contract.StatusQueued {
				t.Fatalf("Send = %v, %v", res, err)
			}
			var rest []byte
			if dbURL != "" {
				rest = pgDump(t, dbURL)
			} else {
				rest = sqliteFiles(t, dir)
			}
			if !bytes.Contains(rest, []byte("MkDeviceClearq")) {
				t.Fatalf("the device id, stored in the clear, is not in what was scanned (%d bytes): the scan sees nothing", len(rest))
			}
			for _, m := range atRestMarkers {
				if bytes.Contains(rest, []byte(m)) {
					t.Errorf("%s is stored in the clear", m)
				}
			}
			for _, f := range []string{payloadKeysFile, digestKeyFile} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("key file %s: %v, %v; want mode 0600", f, fi, err)
				}
			}

			if err := p1.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			p1.cmd.Wait()
			p2 := startEmulator(t, env...)
			// The digest key survived too: the host's resend is the same event
			// (queued, and delivered no second time below).
			h2, err := hostclient.New(hostclient.Options{BaseURL: p2.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := h2.Send(ctx, []string{reg}, n); err != nil || res[0].Status != contract.StatusQueued {
				t.Fatalf("the resend after the restart = %v, %v; want queued", res, err)
			}
			for range 2 { // the task died with the first process: the sweep, each minute, hands the batch to a new one
				emulatortest.Control(t, p2.origin, "POST", "/_emulator/clock", `{"advanceMs":61000}`, nil)
				emulatortest.Control(t, p2.origin, "POST", "/_emulator/tasks/run-due", "", nil)
			}
			in := processInbox(t, p2.origin)
			if len(in) != 1 || in[0].Status != http.StatusOK {
				t.Fatalf("after the restart the stand-in got %+v, want one accepted request", in)
			}
			for _, m := range atRestMarkers {
				if !bytes.Contains(in[0].Body, []byte(m)) {
					t.Errorf("the delivered message lacks %s: %s", m, in[0].Body)
				}
			}
		})
	}
}

// sqliteFiles returns the bytes of every file of the SQLite database in
// dir: the database and its -wal and -shm.
func sqliteFiles(t *testing.T, dir string) []byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, store.SQLiteFile+"*"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("database files in %s: %v, %v; want the database and its -wal at least", dir, paths, err)
	}
	var out []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// pgDump returns a pg_dump of the schema dbURL's search_path names, its
// data included.
func pgDump(t *testing.T, dbURL string) []byte {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		bin = "/usr/lib/postgresql/15/bin/pg_dump"
	}
	out, err := exec.Command(bin, "--dbname="+u.String(), "--schema="+schema).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return out
}
