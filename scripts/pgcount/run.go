package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
)

// errUsage is returned for a flag out of range.
var errUsage = errors.New("usage")

// settingName matches a PostgreSQL setting's name.
var settingName = regexp.MustCompile(`^[a-z_][a-z0-9_.]*$`)

// options are the command's flags.
type options struct {
	mode     string
	regs     []int
	inWindow []int
	sends    [2]int
	window   windowOptions
	burst    burstOptions
	pgbin    string
	port     int
	split    bool
	// pending is -pending: other hosts' batches pending while the counted
	// sends run.
	pending int
	// settings are -pg-setting's lines of the cluster's configuration.
	settings settings
}

// settings is -pg-setting: name=value lines added to the counted cluster's
// postgresql.conf, in order, after pgcount's own (a later line wins).
type settings []string

func (s *settings) String() string { return strings.Join(*s, ",") }

// Set checks one name=value and adds it.
func (s *settings) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || !settingName.MatchString(name) || value == "" || strings.ContainsAny(value, "'\\\n") {
		return fmt.Errorf("%w: -pg-setting wants name=value, as deadlock_timeout=1s", errUsage)
	}
	*s = append(*s, v)
	return nil
}

// conf returns the settings as postgresql.conf lines.
func (s settings) conf() string {
	var b strings.Builder
	for _, v := range s {
		name, value, _ := strings.Cut(v, "=")
		fmt.Fprintf(&b, "%s = '%s'\n", name, value)
	}
	return b.String()
}

// run parses args and prints one measurement per -regs and -in-window.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stdout)
	if err != nil {
		return err
	}
	for _, tool := range []string{"valgrind", filepath.Join(o.pgbin, "initdb"), filepath.Join(o.pgbin, "postgres")} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("needs %s: %w", tool, err)
		}
	}
	c, err := newCluster(ctx, o.pgbin, o.port, o.split, o.settings, stderr)
	if err != nil {
		return err
	}
	defer c.remove()
	c.pending = o.pending
	switch o.mode {
	case "window":
		return c.runWindow(ctx, o, stdout)
	case "burst":
		return c.runBurst(ctx, o, stdout)
	}
	for _, regs := range o.regs {
		for _, k := range o.inWindow {
			total, splits, err := c.pair(func(i int) (counted, error) {
				return c.count(ctx, o.mode, regs, k, o.sends[i])
			})
			if err != nil {
				return err
			}
			per := float64(total[1]-total[0]) / float64(o.sends[1]-o.sends[0])
			fmt.Fprintf(stdout, "pgcount mode=%s regs=%d in-window=%d instructions/%s=%.0f (PostgreSQL's backends, runs of %d and %d)\n",
				o.mode, regs, k, unit[o.mode], per, o.sends[0], o.sends[1])
			if o.split {
				printSplit(stdout, splits, o.sends[1]-o.sends[0])
			}
			line, err := json.Marshal(map[string]any{"mode": o.mode, "regs": regs, "inWindow": k,
				"instructionsPerSend": int64(per), "sends": o.sends, "totals": total})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", line)
		}
	}
	return nil
}

// parse reads the flags.
func parse(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("pgcount", flag.ContinueOnError)
	fs.SetOutput(stdout)
	regs, inWindow, sends := "1,5", "299,10", "100,400"
	fs.StringVar(&o.mode, "mode", "send", "what one unit is: send (a /v1/send admission), push (a send and the delivery of each batch it made due: claim, provider, outcome), window (a send joining open batches, window.go), burst (a delivered push of a burst to one phone, burst.go), floor (the rows a one-phone push writes and nothing else, floor.go), or insert (a one-row insert transaction, the yardstick)")
	fs.StringVar(&regs, "regs", regs, "registrations per request, one measurement each (comma-separated)")
	fs.StringVar(&inWindow, "in-window", inWindow, "the host's events in its quota window at each send, one measurement each (comma-separated)")
	fs.StringVar(&sends, "sends", sends, "the two numbers of counted sends whose totals are compared")
	members := o.window.flags(fs)
	alerts, bursts := o.burst.flags(fs)
	fs.StringVar(&o.pgbin, "pgbin", newestPGBin(), "the directory of PostgreSQL's server binaries")
	fs.IntVar(&o.port, "port", 0, "the private cluster's port, on 127.0.0.1 (0: a free one)")
	fs.Var(&o.settings, "pg-setting", "name=value: a setting of the counted cluster, after pgcount's own (repeatable)")
	fs.IntVar(&o.pending, "pending", 0, "with -mode send or push: a day of other hosts' finished batches (20,000, analysed) before the first send, and this many of theirs pending once the window is filled (a burst elsewhere after the statements' plans were made)")
	fs.BoolVar(&o.split, "split", false, "also print each statement's instructions and executions per unit (split.go); the statement log it needs is left out of the counts")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", errUsage, err) // a flag the flag package refused
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if _, ok := unit[o.mode]; !ok {
		return o, fmt.Errorf("%w: -mode must be send, push, window, burst, floor or insert", errUsage)
	}
	if err := o.burst.parse(*alerts, *bursts); err != nil {
		return o, err
	}
	var err error
	if o.window.members, err = ints(*members, 1, contract.MaxBatchMembers-1); err != nil {
		return o, fmt.Errorf("%w: -members: %w", errUsage, err)
	}
	if o.window.rounds < 1 {
		return o, fmt.Errorf("%w: -rounds must be at least 1", errUsage)
	}
	if o.regs, err = ints(regs, 1, contract.MaxRegistrationIDs); err != nil {
		return o, fmt.Errorf("%w: -regs: %w", errUsage, err)
	}
	if o.inWindow, err = ints(inWindow, 0, contract.AlertQuota-1); err != nil {
		return o, fmt.Errorf("%w: -in-window: %w", errUsage, err)
	}
	n, err := ints(sends, 1, 100_000)
	if err != nil || len(n) != 2 || n[0] >= n[1] {
		return o, fmt.Errorf("%w: -sends wants two increasing counts, as 100,400", errUsage)
	}
	o.sends = [2]int{n[0], n[1]}
	if o.mode == "insert" || o.mode == "floor" { // neither registrations nor a window
		o.regs, o.inWindow = []int{0}, []int{0}
	}
	if o.pending < 0 || o.pending > 1_000_000 {
		return o, fmt.Errorf("%w: -pending must be in 0..1000000", errUsage)
	}
	if o.pending > 0 && o.mode != "send" && o.mode != "push" {
		return o, fmt.Errorf("%w: -pending counts -mode send or push only", errUsage)
	}
	if o.port < 0 || o.port > 65535 {
		return o, fmt.Errorf("%w: -port must be in 0..65535", errUsage)
	}
	if o.port == 0 {
		if o.port, err = freePort(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// ints parses a comma-separated list of integers in lo..hi.
func ints(s string, lo, hi int) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%q: want integers in %d..%d", s, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

// freePort returns a port of 127.0.0.1 that nothing listened on a moment
// ago: the cluster's, which PostgreSQL must be told by number.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newestPGBin returns the newest /usr/lib/postgresql/*/bin, or "" when there
// is none.
func newestPGBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}

// cluster is a private PostgreSQL cluster in a temporary directory.
type cluster struct {
	pgbin, dir string
	port       int
	// as runs a command as the cluster's owner: itself, or through
	// runuser as postgres when the command runs as root (PostgreSQL
	// refuses to run as root).
	as func(ctx context.Context, name string, args ...string) *exec.Cmd
	// stderr receives a line as each run starts; runs counts them.
	stderr io.Writer
	runs   int
	// split makes each run dump per statement and log them (split.go).
	split bool
	// pending is the other hosts' pending batches sends adds after the
	// window is filled (pastBatches, pendingElsewhere).
	pending int
}

// counted is what one run counted: its backends' instructions in all, per
// statement with -split, and how many backends ran them (pair).
type counted struct {
	total    int64
	split    split
	backends int
}

// pairTries is how many times pair runs a measurement's two runs at most.
const pairTries = 3

// pair runs the two runs of one measurement, run(0) and run(1), and runs
// both again, at most pairTries times in all, while their clusters counted
// instructions in different numbers of backends. A connection opened in one
// run and not in the other prepares and plans every statement it runs
// again, and its first executions are planned anew (custom plans): some 1.2
// M instructions, which a measurement of 20 units reads as 60,000 a unit.
// It happens when a send finds its usual connection still busy (a slot of
// the store's combiners not yet given back), which a loaded machine makes
// likelier. (A CI run once read TestWindowCostHeld's one-registration send
// 59,000 instructions, 9 %, over its count, what one such connection makes
// of 20 units; that run kept no split to tell whether it was the cause.)
// The last pair stands, with a note, if none matched.
func (c *cluster) pair(run func(i int) (counted, error)) ([2]int64, [2]split, error) {
	var (
		total    [2]int64
		splits   [2]split
		backends [2]int
	)
	for try := 1; ; try++ {
		for i := range 2 {
			r, err := run(i)
			if err != nil {
				return total, splits, err
			}
			total[i], splits[i], backends[i] = r.total, r.split, r.backends
		}
		if backends[0] == backends[1] {
			return total, splits, nil
		}
		fmt.Fprintf(c.stderr, "pgcount: the two runs counted %d and %d backends", backends[0], backends[1])
		if try == pairTries {
			fmt.Fprintf(c.stderr, "; kept after %d tries\n", try)
			return total, splits, nil
		}
		fmt.Fprintf(c.stderr, "; running both again\n")
	}
}

// newCluster creates a cluster (initdb) set for counting: no autovacuum,
// no fsync.
func newCluster(ctx context.Context, pgbin string, port int, splitting bool, extra settings, stderr io.Writer) (*cluster, error) {
	dir, err := os.MkdirTemp("", "pgcount-")
	if err != nil {
		return nil, err
	}
	c := &cluster{pgbin: pgbin, dir: dir, port: port, split: splitting, stderr: stderr, as: exec.CommandContext}
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		owner, err := user.Lookup("postgres")
		if err != nil {
			c.remove()
			return nil, fmt.Errorf("run as root, needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(owner.Uid)
		gid, _ := strconv.Atoi(owner.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			c.remove()
			return nil, err
		}
		c.as = func(ctx context.Context, name string, args ...string) *exec.Cmd {
			return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.as(ctx, filepath.Join(pgbin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres").CombinedOutput(); err != nil {
		c.remove()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n"+
		"autovacuum = off\nfsync = off\nmax_wal_size = '16GB'\n", port, dir)
	if splitting {
		conf += splitServerConf
	}
	conf += extra.conf()
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// remove deletes the cluster's directory.
func (c *cluster) remove() { os.RemoveAll(c.dir) }

// countedPool is the PostgreSQL pool of the store whose sends are counted:
// the smallest whose combiners' slots have a pool of their own, as in
// production (infra: database_pool_max 6 to 12), so that a transaction in a
// slot is counted as production runs it, its lock wait its connection's.
const countedPool = 6

// unit names what one counted step of each mode is.
var unit = map[string]string{"send": "send", "push": "send+deliveries", "window": "joining send", "burst": "delivered push", "floor": "push's rows", "insert": "insert"}

// count starts the cluster under callgrind, admits k+1 sends and then n
// more of regs registrations by one host with k events in its window (with
// mode push, delivering each batch a send made due; with mode insert, n+1
// one-row insert transactions instead), stops the cluster and returns what
// it counted.
func (c *cluster) count(ctx context.Context, mode string, regs, k, n int) (counted, error) {
	c.runs++
	switch mode {
	case "window":
		fmt.Fprintf(c.stderr, "pgcount: run %d: regs=%d, %d rounds of %d sends\n", c.runs, regs, n, k)
	case "burst":
		fmt.Fprintf(c.stderr, "pgcount: run %d: %d bursts of %d alerts to one phone\n", c.runs, n, k)
	case "insert", "floor":
		fmt.Fprintf(c.stderr, "pgcount: run %d: %d units (%s), after one uncounted\n", c.runs, n, unit[mode])
	default:
		fmt.Fprintf(c.stderr, "pgcount: run %d: regs=%d in-window=%d, %d sends to fill the window and %d counted\n",
			c.runs, regs, k, k+1, n)
	}
	out := filepath.Join(c.dir, fmt.Sprintf("run%d", c.runs))
	if err := c.as(ctx, "mkdir", out).Run(); err != nil {
		return counted{}, err
	}
	data := filepath.Join(c.dir, "data")
	args := []string{"--tool=callgrind", "--trace-children=yes", "--collect-atstart=no",
		"--toggle-collect=PostgresMain", "--callgrind-out-file=" + filepath.Join(out, "%p.cg")}
	if c.split {
		args = append(args, splitValgrindArgs...)
	}
	server := c.as(ctx, "valgrind", append(args, filepath.Join(c.pgbin, "postgres"), "-D", data)...)
	server.Stdout, server.Stderr = io.Discard, io.Discard
	logName := filepath.Join(c.dir, fmt.Sprintf("run%d.log", c.runs))
	if c.split {
		f, err := os.Create(logName)
		if err != nil {
			return counted{}, err
		}
		defer f.Close()
		server.Stderr = f
	}
	if err := server.Start(); err != nil {
		return counted{}, err
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		err := c.as(context.WithoutCancel(ctx), filepath.Join(c.pgbin, "pg_ctl"), "-D", data, "stop", "-m", "fast", "-w").Run()
		if werr := server.Wait(); err == nil && werr != nil {
			err = fmt.Errorf("postgres under valgrind: %w", werr)
		}
		return err
	}
	defer stop()
	url, err := c.createDatabase(ctx, fmt.Sprintf("run%d", c.runs))
	if err != nil {
		return counted{}, err
	}
	switch mode {
	case "insert":
		err = inserts(ctx, url, n)
	case "floor":
		err = floor(ctx, url, n)
	case "window":
		err = c.rounds(ctx, url, regs, k, n)
	case "burst":
		err = c.bursts(ctx, url, k, n)
	default:
		err = c.sends(ctx, url, mode == "push", regs, k, n)
	}
	if err != nil {
		return counted{}, err
	}
	if err := stop(); err != nil {
		return counted{}, err
	}
	var r counted
	if r.total, r.backends, err = totals(out); err != nil || !c.split {
		return r, err
	}
	r.split, err = readSplit(out, logName)
	return r, err
}

// createDatabase waits for the server and creates the database name, so
// that every run starts empty, and returns its URL.
func (c *cluster) createDatabase(ctx context.Context, name string) (string, error) {
	base := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/", c.port)
	var err error
	// Polling is the way across a process boundary: valgrind takes seconds
	// to start the server.
	for range 240 {
		var conn *pgx.Conn
		if conn, err = pgx.Connect(ctx, base+"postgres?sslmode=disable"); err == nil {
			_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
			conn.Close(ctx)
			if err != nil {
				return "", fmt.Errorf("create database: %w", err)
			}
			return base + name + "?sslmode=disable", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("the counted cluster did not answer: %w", err)
}

// sends admits k+1 sends and then n more through the empty database url
// (store.Open migrates it), the clock moving between sends so that from the
// (k+1)th on each finds k of the host's events in its window. With deliver,
// each batch a send makes due is delivered in the call (delivery.Inline, as
// ORCA_PUSH_DELIVER_INLINE=1 does): its claim, a provider that accepts, its
// outcome.
func (c *cluster) sends(ctx context.Context, url string, deliver bool, regs, k, n int) error {
	s, err := store.Open(ctx, store.Options{DatabaseURL: url, PoolMax: countedPool})
	if err != nil {
		return fmt.Errorf("open the counted cluster: %w", err)
	}
	defer s.Close()
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	a, _, ids, err := admission(ctx, s, clk, deliver, regs, 0, delivery.NopScheduler{})
	if err != nil {
		return err
	}
	// k events in the window (created_at > now − window) at every send:
	// the sends are window/(k+1) apart.
	step := contract.QuotaWindow / time.Duration(k+1)
	if c.pending > 0 {
		if err := pastBatches(ctx, url, clk.Now().UnixMilli()); err != nil {
			return err
		}
	}
	for i := range k + 1 + n {
		if i == k+1 && c.pending > 0 {
			if err := pendingElsewhere(ctx, url, c.pending, clk.Now().UnixMilli()); err != nil {
				return err
			}
		}
		if err := send(ctx, a, ids, i, epoch); err != nil {
			return err
		}
		clk.Advance(step)
	}
	return nil
}

// pastBatches and pendingElsewhere are -pending's batches of other hosts: a day's
// finished ones, added before the first send and analysed as autovacuum
// leaves them, so that the counted host's statements are planned as on a
// gateway that has run a while with few batches pending; and then n
// pending ones, 10 to a registration, due an hour after now as alerts in a
// coalescing window wait, added once the window is filled: a burst
// elsewhere, after the plans were made. A send or delivery of the counted
// host should cost the same with them as without (-pending 0): none of its
// statements has a reason to read another registration's batches.
func pastBatches(ctx context.Context, url string, now int64) error {
	return otherBatches(ctx, url, `INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id,
			kind, payload_json, members, state, due_at, expires_at, scheduled_at, created_at, finished_at)
		SELECT gen_random_uuid()::text, 'busy-host-' || (i / 100), 'busy-phone-' || (i / 10), 'alert', '[]', 1, 'sent',
			CAST($2 AS BIGINT) - i, CAST($2 AS BIGINT) - i + 60000, CAST($2 AS BIGINT) - i, CAST($2 AS BIGINT) - i,
			CAST($2 AS BIGINT) - i + 1000
		FROM generate_series(1, $1) AS i`, 20_000, now, true)
}

// pendingElsewhere adds the n pending batches.
func pendingElsewhere(ctx context.Context, url string, n int, now int64) error {
	return otherBatches(ctx, url, `INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id,
			kind, payload_json, members, state, due_at, expires_at, scheduled_at, created_at)
		SELECT gen_random_uuid()::text, 'busy-host-' || (i / 100), 'busy-phone-' || (i / 10), 'alert', '[]', 1, 'pending',
			CAST($2 AS BIGINT) + 3600000, CAST($2 AS BIGINT) + 7200000, $2, $2
		FROM generate_series(1, $1) AS i`, n, now, false)
}

// otherBatches runs insert with n and now, and with analyse analyses the
// batches. A burst is not analysed: on a table of a day's batches it is too
// few rows for autovacuum to, so plans made before it stand.
func otherBatches(ctx context.Context, url, insert string, n int, now int64, analyse bool) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("other hosts' batches: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, insert, n, now); err != nil {
		return fmt.Errorf("other hosts' batches: %w", err)
	}
	if !analyse {
		return nil
	}
	if _, err := conn.Exec(ctx, `ANALYZE push_delivery_batches`); err != nil {
		return fmt.Errorf("other hosts' batches: %w", err)
	}
	return nil
}

// tokenHash is the counted host's session.
const tokenHash = "token-hash"

// admission registers regs phones of the counted host on s, opens its
// session and returns an Admission over s with the coalescing window
// window, its Deliverer and the phones' registration ids. With deliver, each
// batch a send makes due is delivered in the call. tasks takes what is left
// to a task.
func admission(ctx context.Context, s *store.Store, clk *clock.Manual, deliver bool, regs int,
	window time.Duration, tasks delivery.Scheduler) (*delivery.Admission, *delivery.Deliverer, []string, error) {
	var ids []string
	for i := range regs {
		id, err := s.RegisterDevice(ctx, "host", contract.RegisterRequest{DeviceID: fmt.Sprintf("phone%d", i),
			Platform: contract.PlatformAndroid, Token: fmt.Sprintf("%040d", i)}, clk.Now().UnixMilli())
		if err != nil {
			return nil, nil, nil, err
		}
		ids = append(ids, id)
	}
	// As a sign-in leaves it: the host's row and its session.
	if err := s.HostTx(ctx, "host", func(tx *store.Tx) error {
		if err := tx.TouchHost(ctx, "host", "host-key", clk.Now().UnixMilli()); err != nil {
			return err
		}
		return tx.ReplaceSession(ctx, "host", tokenHash, 1<<62, clk.Now().UnixMilli())
	}); err != nil {
		return nil, nil, nil, err
	}
	// A key of this run's: what it seals is measured, never read again.
	entry, err := seal.NewEntry(rand.Reader, "pgcount")
	if err != nil {
		return nil, nil, nil, err
	}
	keys, err := seal.ParseRing(entry)
	if err != nil {
		return nil, nil, nil, err
	}
	digestText, err := seal.NewDigestKey(rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	digest, err := seal.ParseDigestKey(digestText)
	if err != nil {
		return nil, nil, nil, err
	}
	counters := obs.NewCounters(nil)
	var sched delivery.Scheduler = tasks
	var d *delivery.Deliverer
	if deliver {
		var err error
		d, err = delivery.NewDeliverer(delivery.DelivererOptions{Store: s, Clock: clk, Counters: counters,
			Scheduler: tasks, APNS: accepting{}, FCM: accepting{}, Keys: keys})
		if err != nil {
			return nil, nil, nil, err
		}
		if sched, err = delivery.NewInline(d, tasks, clk); err != nil {
			return nil, nil, nil, err
		}
	}
	a, err := delivery.NewAdmission(delivery.Options{Store: s, Clock: clk, Counters: counters, Scheduler: sched, Keys: keys,
		Digest: digest, Coalesce: window})
	if err != nil {
		return nil, nil, nil, err
	}
	return a, d, ids, nil
}

// epoch is the notificationEpoch of -mode send's alerts: a UUID, as Orca's.
const epoch = "3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69"

// send admits the counted host's ith send, of epoch, to ids, and fails
// unless every registration queued it.
func send(ctx context.Context, a *delivery.Admission, ids []string, i int, epoch string) error {
	b := fmt.Appendf(nil, `{"v":1,"registrationIds":%s,"notification":{"notificationId":"task-%d",`+
		`"notificationSeq":%d,"notificationEpoch":%q,"source":"agent-task-complete",`+
		`"agentState":"finished","title":"Refactor finished","body":"All green"}}`, quoted(ids), i, i, epoch)
	req, err := contract.DecodeSendRequest(b)
	if err != nil {
		return err
	}
	res, err := a.SendAs(ctx, "host", tokenHash, req)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Status != contract.StatusQueued {
			return fmt.Errorf("send %d: %s, want queued", i, r.Status)
		}
	}
	return nil
}

// accepting is a provider that accepts every push, so that a counted
// delivery is the gateway's database work alone.
type accepting struct{}

func (accepting) Send(context.Context, push.Target, push.Message) push.Outcome {
	return push.Outcome{Kind: push.Sent}
}

// inserts runs n+1 one-row insert transactions (BEGIN, INSERT, COMMIT) into
// a table of the empty database url: the yardstick a push's work is set
// beside, counted the same way.
func inserts(ctx context.Context, url string, n int) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("open the counted cluster: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE yardstick (id bigserial PRIMARY KEY, created_at bigint NOT NULL, body text NOT NULL)"); err != nil {
		return err
	}
	for i := range n + 1 {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO yardstick (created_at, body) VALUES ($1, $2)", int64(i), "Refactor finished")
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// quoted returns ids as a JSON array.
func quoted(ids []string) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// totals sums the instructions of every callgrind file in dir, and counts
// the backends they were counted in (files of processes that ran no
// statement, such as the checkpointer's, count none).
func totals(dir string) (sum int64, backends int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.cg*")) // a backend's "<pid>.cg" and its dumps' "<pid>.cg.<n>"
	if err != nil {
		return 0, 0, err
	}
	counted := make(map[string]bool) // the backends, by process id
	for _, name := range files {
		n, err := fileTotal(name)
		if err != nil {
			return 0, 0, err
		}
		sum += n
		if n > 0 {
			counted[strings.SplitN(filepath.Base(name), ".", 2)[0]] = true
		}
	}
	if sum == 0 {
		return 0, 0, fmt.Errorf("no instructions counted in %s", dir)
	}
	return sum, len(counted), nil
}

// fileTotal reads the "totals:" (or "summary:") line of a callgrind file.
func fileTotal(name string) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"totals:", "summary:"} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				return strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			}
		}
	}
	return 0, sc.Err()
}
