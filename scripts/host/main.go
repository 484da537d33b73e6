// Command host is a desktop host on the command line, a thin layer over
// shared/hostclient: it signs in with a host key kept in a file, registers
// phones, lists and deletes them, sends alerts and dismissals, and follows
// the emulator's inbox.
//
//	go run ./scripts/host signin
//	go run ./scripts/host register ios
//	go run ./scripts/host send --title hello
//	go run ./scripts/host watch
//
// It talks to ORCA_PUSH_GATEWAY_URL (default http://127.0.0.1:8080, the
// emulator) through the public routes only. Exit codes: 0 done, 1 refused by
// the gateway (its error is printed) or failed, 2 a command line it does not
// understand. -h prints the usage and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"onorca.dev/push/shared/hostclient"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err for a person and returns the exit code it means.
func exitCode(err error, stderr io.Writer) int {
	var (
		usage  usageError
		api    *hostclient.APIError
		origin *hostclient.OriginError
	)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "host: %v\nrun 'go run ./scripts/host -h' for the commands and flags\n", err)
		return 2
	case errors.As(err, &api):
		fmt.Fprintf(stderr, "host: refused by the gateway: %d %s\n", api.Status, api.Code)
		if api.Code == "invalid_request" {
			fmt.Fprintln(stderr, "host: the emulator's terminal names the field and the rule broken")
		}
		return 1
	case errors.As(err, &origin):
		fmt.Fprintf(stderr, "host: %v\nhost: the gateway's ORCA_PUSH_PUBLIC_URL is %s: use that URL in ORCA_PUSH_GATEWAY_URL, or pass --origin %s\n",
			err, origin.Received, origin.Received)
		return 1
	default:
		fmt.Fprintf(stderr, "host: %v\n", err)
		return 1
	}
}
