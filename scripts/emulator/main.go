// Command emulator runs the whole gateway in one local process: every
// function at its contract path, SQLite under ORCA_PUSH_DATA_DIR by default
// (PostgreSQL with ORCA_PUSH_DATABASE_URL), the /_emulator control API of
// design.md and a console for people at /_emulator/. It prints one line when
// ready.
//
//	go run ./scripts/emulator [-addr 127.0.0.1:8080] [-manual-clock]
//
// It exits 0 after -h or a signal, 2 on a command line it does not
// understand, and 1 when it cannot start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "emulator: %v\nrun with -h for the flags and environment\n", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "emulator:", err)
		os.Exit(1)
	}
}
