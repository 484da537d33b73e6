// Command soak is a chaos soak anyone can run: it drives the emulator
// process on PostgreSQL with a small fleet of hosts for a bounded time while
// it injects faults at random, then checks every accepted alert's fate.
//
//	go run ./scripts/soak -private-postgres [-duration 60s] [-fault-every 3s]
//	go run ./scripts/soak -database-url postgres://... [-duration 60s]
//
// The faults: kill -9 of the emulator and a restart on the same database and
// port; with -private-postgres, an immediate-mode restart of the PostgreSQL
// cluster the soak started for itself (initdb, pg_ctl); and provider faults
// at the stand-ins (5xx, 429 with Retry-After, resets and hangs that run
// into the provider timeout). The clock is the real one. Before each kill every provider request is made to hang, and the
// stand-ins' inbox is read: nothing is accepted between that reading and
// the kill, so the inboxes read, with the last process's at the end, hold
// every request a provider accepted.
//
// The soak calls the sweep function every minute, as Cloud Scheduler does
// whatever becomes of the instances (the emulator's own minute starts again
// with each process). It records every fault it arms, per process, and the
// inboxes' faulted requests give each one's window: from when it was armed
// to its last answer (a hang's until the provider timeout).
//
// After -duration the soak stops sending, clears the faults and waits (at
// most -drain) until POST /v1/receipts gives every recipient of every
// accepted alert a final state. Then each must be sent, with a request the
// stand-in accepted, or expired through the soak's own faults: the provider
// fault windows of its phone's provider, each reaching the longest retry
// delay past its end, held from the alert's answer until its deadline. Any
// other expiry is a loss, payload_key_unknown always, and the report names
// each expiry's windows or says why it is a loss. A request a stand-in
// accepted for a recipient whose receipt is not sent is unreported. A copy
// accepted twice must carry the same collapse id and the two copies must
// straddle a kill or a PostgreSQL restart (the provider accepted, the
// gateway could not record so). It prints the counts as one line of JSON
// and exits 1 on any loss, failure, wrong duplicate or unreported request.
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
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}
