// Command emulator runs the whole gateway in one local process: every
// function at its contract path, SQLite under ORCA_PUSH_DATA_DIR by default
// (PostgreSQL with ORCA_PUSH_DATABASE_URL), and the /_emulator control API of
// design.md. It prints one line when ready.
//
//	go run ./scripts/emulator [-addr 127.0.0.1:8080] [-manual-clock]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "emulator:", err)
		os.Exit(1)
	}
}
