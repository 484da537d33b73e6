package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"onorca.dev/push/shared/hostclient"
)

// gatewayVar names the gateway the command line talks to. It is the host's
// setting, not the gateway's, so it is not in shared/config.
const gatewayVar = "ORCA_PUSH_GATEWAY_URL"

// defaultGateway is the emulator's default address.
const defaultGateway = "http://127.0.0.1:8080"

// usageError is a command line the program does not understand: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// command is one subcommand.
type command struct {
	args    string // the positional arguments, for the usage line
	summary string
	// flags declares the command's own flags on fs and returns what runs it
	// once they are parsed, with the positional arguments.
	flags func(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error
}

// commands is every subcommand, in the order the usage lists them.
var commands = []struct {
	name string
	command
}{
	{"signin", command{"", "sign the host in and keep the session beside the key", signinFlags}},
	{"register", command{"ios|android", "register a phone (a random valid token unless --token)", registerFlags}},
	{"devices", command{"", "list the host's registrations", devicesFlags}},
	{"send", command{"", "send an alert to --to IDs or to every phone (--all, the default)", sendFlags}},
	{"dismiss", command{"", "send the dismissal of alert --id", dismissFlags}},
	{"delete", command{"ID", "delete a registration", deleteFlags}},
	{"badge", command{"ID N", "set a registration's app-icon badge to N, the phone's own count (opts it in)", badgeFlags}},
	{"receipts", command{"SEQ...", "what became of the key's events (--epoch, --dismiss)", receiptsFlags}},
	{"watch", command{"", "follow the emulator's inbox, one line per provider request", watchFlags}},
}

// cli holds the global flags and where output goes.
type cli struct {
	stdout, stderr io.Writer
	gateway        string
	origin         string
	keyPath        string
	json           bool
}

// globalFlags declares the flags every command accepts.
func (c *cli) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.gateway, "gateway", c.gateway, "gateway `URL` (or "+gatewayVar+")")
	fs.StringVar(&c.origin, "origin", c.origin, "the gateway's public origin, when it differs from --gateway (its ORCA_PUSH_PUBLIC_URL)")
	fs.StringVar(&c.keyPath, "key", c.keyPath, "host key `file`, created 0600 on first use; the session and the sequence are kept beside it")
	fs.BoolVar(&c.json, "json", c.json, "print JSON for scripts")
}

// run parses args and runs the command. -h prints the usage on stdout and
// returns flag.ErrHelp.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c := &cli{stdout: stdout, stderr: stderr, gateway: getenv(gatewayVar), keyPath: defaultKeyPath(getenv)}
	if c.gateway == "" {
		c.gateway = defaultGateway
	}
	top := flag.NewFlagSet("host", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	c.globalFlags(top)
	err := top.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout, top)
		return err
	case err != nil:
		return usageError{err}
	case top.NArg() == 0:
		return usagef("no command: want one of %s", commandNames())
	}
	name := top.Arg(0)
	i := commandIndex(name)
	if i < 0 {
		return usagef("unknown command %q: want one of %s", name, commandNames())
	}
	fs := flag.NewFlagSet("host "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.globalFlags(fs)
	runCommand := commands[i].flags(fs)
	positional, err := parseInterleaved(fs, top.Args()[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		printCommandUsage(stdout, name, commands[i].command, fs)
		return err
	case err != nil:
		return usageError{err}
	}
	err = runCommand(ctx, c, positional)
	var api *hostclient.APIError
	if c.json && errors.As(err, &api) {
		c.print(struct {
			Status int    `json:"status"`
			Error  string `json:"error"`
		}{api.Status, api.Code}, "")
	}
	return err
}

// parseInterleaved parses flags that may follow positional arguments
// ("register ios --sandbox"), returning the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func commandIndex(name string) int {
	for i, c := range commands {
		if c.name == name {
			return i
		}
	}
	return -1
}

func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func printUsage(w io.Writer, global *flag.FlagSet) {
	fmt.Fprint(w, `Usage: go run ./scripts/host [flags] <command> [flags]

A desktop host on the command line: it signs in with its own key and talks to
the gateway through the public routes, as the Orca desktop does.

Commands:
`)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nFlags of every command:")
	global.SetOutput(w)
	global.PrintDefaults()
	global.SetOutput(io.Discard)
	fmt.Fprint(w, `
Environment:
  `+gatewayVar+`  the gateway (default `+defaultGateway+`, the emulator)

Exit codes: 0 done, 1 refused by the gateway (its error is printed) or failed,
2 a command line this program does not understand.
Run "go run ./scripts/host <command> -h" for a command's flags.
`)
}

func printCommandUsage(w io.Writer, name string, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: go run ./scripts/host %s [flags]\n\n%s.\n\nFlags:\n", strings.TrimSpace(name+" "+c.args), c.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// print writes v as one JSON line with --json, or text otherwise.
func (c *cli) print(v any, text string) {
	if c.json {
		b, _ := json.Marshal(v)
		fmt.Fprintf(c.stdout, "%s\n", b)
		return
	}
	if text != "" {
		fmt.Fprint(c.stdout, text)
	}
}

// defaultKeyPath is orca-push/host.key under the user's configuration
// directory (XDG_CONFIG_HOME when set, else os.UserConfigDir), or in the
// working directory when there is none.
func defaultKeyPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "host.key"
		}
	}
	return filepath.Join(dir, "orca-push", "host.key")
}
