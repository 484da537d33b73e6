package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/store/storetest"
)

// TestSoak runs the chaos soak for a minute on a private PostgreSQL cluster
// (on the test database when initdb and pg_ctl are missing): kills of the
// emulator, PostgreSQL restarts and provider faults every few seconds, then
// every accepted alert delivered (an expiry only where a provider fault held
// past its deadline explains it, which a minute's faults never do), no
// request accepted unreported, duplicates only where a kill explains them
// (issue 26 §6, issue 29 §5). TestCheck holds the check's rules. The
// 30-minute run is in README.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of real time")
	}
	args := []string{"-emulator", emulatortest.MustBuild(t), "-duration", "60s", "-fault-every", "3s"}
	_, initdb := exec.LookPath("initdb")
	_, pgctl := exec.LookPath("pg_ctl")
	if initdb == nil && pgctl == nil {
		args = append(args, "-private-postgres")
	} else {
		t.Log("no initdb and pg_ctl on PATH: on the test database, without PostgreSQL restarts")
		args = append(args, "-database-url", storetest.Postgres(t).Options(t).DatabaseURL)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr)
	t.Logf("report: %s", stdout.String())
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Accepted == 0 || rep.Kills == 0 || rep.Delivered == 0 {
		t.Errorf("the soak accepted %d alerts, killed %d times and delivered %d: it tested nothing", rep.Accepted, rep.Kills, rep.Delivered)
	}
}
