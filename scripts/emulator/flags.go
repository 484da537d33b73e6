package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/tasks"
	"onorca.dev/push/shared/tasks/taskemu"
)

// options are the emulator's flags.
type options struct {
	addr   string
	manual bool
	queues queueOptions
	// readTimeout, writeTimeout and idleTimeout are the HTTP server's
	// (issue 26 §3): Cloud Run bounds the deployed functions' connections,
	// nothing bounds the emulator's but these.
	readTimeout, writeTimeout, idleTimeout time.Duration
}

// queueOptions shape the emulator's Cloud Tasks queues.
type queueOptions struct {
	// count is how many delivery queues the gateway spreads its tasks
	// over (as ORCA_PUSH_TASKS_QUEUE lists them deployed), 1..tasks.MaxQueues.
	count int
	// rate is each queue's dispatches per second (a real queue's
	// max_dispatches_per_second, at most 500); 0: no limit.
	rate float64
	// concurrency is each queue's attempts in flight (a real queue's
	// max_concurrent_dispatches); 0: the emulator's 8 in all.
	concurrency int
}

// The server's default timeouts. A request has 30 s to arrive, headers and a
// body of at most contract.MaxBodyBytes; its answer 60 s, a deployed
// function's timeout (infra/functions.tf), which covers a delivery waiting
// for its provider (contract.ProviderTimeout); an idle keep-alive connection
// is closed after 60 s.
const (
	defaultReadTimeout  = 30 * time.Second
	defaultWriteTimeout = 60 * time.Second
	defaultIdleTimeout  = 60 * time.Second
	// maxHeaderTimeout bounds the wait for a request's headers within the
	// read timeout.
	maxHeaderTimeout = 10 * time.Second
)

// usageError is a command line the emulator does not understand; main exits
// 2 for it, as the flag package does.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

// parseFlags parses args. For -h it prints the help on stdout and returns
// flag.ErrHelp.
func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help is printed below
	fs.StringVar(&o.addr, "addr", "", "`address` to listen on (default 127.0.0.1:$PORT, PORT defaulting to 8080);\n"+
		":PORT or 0.0.0.0:PORT listen on every interface, and the public origin is then http://127.0.0.1:PORT")
	fs.BoolVar(&o.manual, "manual-clock", false, "start with a frozen clock moved only by POST /_emulator/clock (or ORCA_PUSH_MANUAL_CLOCK=1)")
	fs.IntVar(&o.queues.count, "queues", 1, "delivery `queues` the gateway spreads its tasks over by a hash of their registration, 1..32")
	fs.Float64Var(&o.queues.rate, "queue-rate", taskemu.MaxRate, "each queue's dispatches per `second`, as a real queue's max_dispatches_per_second (1..500)")
	fs.IntVar(&o.queues.concurrency, "queue-concurrency", 0, "each queue's deliveries in `flight`, as a real queue's max_concurrent_dispatches (0: 8 in all, 1..1000)")
	fs.DurationVar(&o.readTimeout, "read-timeout", defaultReadTimeout, "`duration` a request may take to arrive, headers and body (headers: at most 10s)")
	fs.DurationVar(&o.writeTimeout, "write-timeout", defaultWriteTimeout, "`duration` from a request's headers to the end of its answer")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", defaultIdleTimeout, "`duration` a keep-alive connection may wait for its next request")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, fs)
		return o, err
	case err != nil:
		return o, usageError{err}
	case fs.NArg() > 0:
		return o, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case o.queues.count < 1 || o.queues.count > tasks.MaxQueues:
		return o, usageError{fmt.Errorf("-queues %d is outside 1..%d", o.queues.count, tasks.MaxQueues)}
	case o.queues.concurrency < 0 || o.queues.concurrency > 1000:
		return o, usageError{fmt.Errorf("-queue-concurrency %d is outside 0..1000", o.queues.concurrency)}
	case !(o.queues.rate >= 1 && o.queues.rate <= taskemu.MaxRate):
		return o, usageError{fmt.Errorf("-queue-rate %v is outside 1..%d", o.queues.rate, taskemu.MaxRate)}
	case o.readTimeout <= 0 || o.writeTimeout <= 0 || o.idleTimeout <= 0:
		return o, usageError{errors.New("-read-timeout, -write-timeout and -idle-timeout must be positive")}
	}
	return o, nil
}

// printHelp writes the usage, the flags and every environment variable.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: go run ./scripts/emulator [flags]

The whole gateway in one local process: every route, SQLite (or PostgreSQL),
a Cloud Tasks emulator, APNs and FCM stand-ins, the control API under
/_emulator and a console at /_emulator/. Nothing is sent to Apple or Google.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, `
Environment (the gateway's variables; here ORCA_PUSH_PUBLIC_URL defaults to
the emulator's own origin, and the APNs and FCM settings only name the
stand-ins' topic and project):
`)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, v := range config.Vars() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Name, v.Default, v.Meaning)
	}
	tw.Flush()
}
