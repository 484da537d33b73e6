// Command pgcount counts the instructions PostgreSQL spends on one /v1/send
// admission, with valgrind's callgrind: a count, not a time, so it is the
// same from run to run (to about 0.2 %) on a machine whose timings move by
// half, and a change of a few percent in what a send costs the database
// shows in one run.
//
//	go run ./scripts/pgcount [-mode send|push|insert] [-regs 1,5] [-in-window 299,10] [-sends 100,400] [-pending 2000]
//	go run ./scripts/pgcount -mode window [-regs 1,5] [-members 1,16,31] [-rounds 30]
//	go run ./scripts/pgcount -mode burst [-alerts 1,5,10,20] [-bursts 30,90]
//	go run ./scripts/pgcount ... [-pg-setting name=value ...]
//
// -mode push counts a whole push instead: each send and then the delivery of
// every batch it made due, in the call as ORCA_PUSH_DELIVER_INLINE=1 does
// (the claim, a provider that accepts at once, the outcome); -mode insert
// counts a one-row insert transaction (BEGIN, INSERT, COMMIT), the yardstick
// to set a push beside; -mode window counts a send that joins an open batch
// of -members alerts, with a 60 s coalescing window (window.go); -mode
// burst counts a delivered push of -alerts alerts to one phone admitted
// together (burst.go). -pg-setting adds a line to the counted cluster's
// configuration. -pending (send and push) counts under a burst elsewhere:
// the statements are planned on a table of other hosts' finished batches,
// analysed with none pending, as on a gateway that has run a while, and
// then that many of theirs are pending while the counted sends run
// (run.go's pastBatches and pendingElsewhere); a push should cost what it
// costs without.
//
// For each number of registrations and each number of the host's events in
// its quota window, it starts a private PostgreSQL cluster under callgrind
// (counting only the backends' PostgresMain, so no background process is
// counted), admits enough sends to fill the window and then the first
// -sends count more, one at a time, through shared/delivery's Admission at the
// gateway's quota and with no coalescing window; then it does the same with
// the second count. The difference of the two totals over the difference of
// the counts is the instructions of one send, set-up, migrations and
// connections cancelled out. Keep the first count in the hundreds: runs of a
// few sends read differently (10 and 30 sends: 0.66 M instructions where 100
// and 400 give 0.71 M), likely from PostgreSQL's first plans and cold
// caches. A host kept at 299 events in its window is the one
// BenchmarkSendAdmission measures; a host with 10 is a quieter one.
//
// It needs valgrind and PostgreSQL's server binaries (initdb, postgres,
// pg_ctl; -pgbin, by default the newest /usr/lib/postgresql/*/bin). Run as
// root, it runs the cluster as the postgres user. Each measurement is
// printed as a human line and then as one line of JSON.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "pgcount:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "pgcount:", err)
		os.Exit(1)
	}
}
