// Command load drives a running gateway, normally the emulator on the real
// clock, with many hosts and measures it. It has four modes:
//
//	go run ./scripts/load closed [-regs 1,5] [-concurrency 4,16,64]  # closed-loop maximum throughput
//	go run ./scripts/load open -rate R [-regs 1,5] [-duration 10s]   # open-loop latency at R requests/s
//	go run ./scripts/load lone [-hosts 16] [-alerts 10]              # lone-alert delivery latency
//	go run ./scripts/load burst [-alerts 1,5,10,20]                  # a burst to one phone: costs per push
//
// closed runs each concurrency for -duration after -warmup, every worker
// sending POST /v1/send as soon as its previous answer came, and reports the
// highest rate of queued requests it reached: the closed-loop maximum.
//
// open starts requests on a fixed schedule (request i at t0 + i/R), not
// after the previous answer, and measures each latency from its scheduled
// start, so a gateway that stalls shows the stall in every request that
// waited behind it rather than sending fewer requests (a closed loop's
// coordinated omission). It reports the achieved rate, p50, p90, p99, p99.9
// and max, and every request that failed or had a registration answered
// other than queued as an error; with -timeline, also each second of the
// measurement by the requests due in it and the provider requests the
// stand-ins received in it. Its hosts join over -stagger first (the
// coalescing window by default), as a real fleet's desktops start at
// different times, so that their phones' coalescing windows are not in
// step.
//
// lone sends alerts one at a time per host, each after the previous one's
// coalescing window, and reports from the emulator's stand-in inbox how
// long past the window each was accepted by the provider stand-in.
//
// burst sends, for each count of -alerts, that many alerts to one iPhone of
// a fresh host all started together, waits for the stand-in to have them
// and the tasks to drain, and reports the Cloud Tasks operations and the
// function requests (send and deliver) per push the stand-in accepted, from
// the emulator's /_emulator/usage. The queues, the window and inline
// delivery are the emulator's settings (-queues, ORCA_PUSH_COALESCE_MS,
// ORCA_PUSH_DELIVER_INLINE).
//
// closed and open spread the load over enough hosts (fresh key pairs, each
// with a client IP of its own and -phones registrations) that no host spends
// more than its alert quota or sends faster than its request bucket refills,
// so the gateway's per-host limits are never what is measured. After the
// measurements they wait for the emulator's stand-ins to receive every
// queued alert and report the deliveries (accepted by the provider and
// failed, separately). Each measurement is printed as a human line and then
// as one line of JSON. Before anything, the tool retries GET /health for
// -ready, so it can be started together with the emulator.
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
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}
