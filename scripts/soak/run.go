package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/providers/standin"
)

// sweepPath is the emulator's path of the sweep function.
const sweepPath = "/_internal/sweep"

// errUsage marks a command line the soak does not understand.
var errUsage = errors.New("usage")

// options are the soak's flags.
type options struct {
	databaseURL, emulator string
	duration, faultEvery  time.Duration
	drain                 time.Duration
	hosts                 int
	rate                  float64
	seed                  uint64
	privatePostgres       bool
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.databaseURL, "database-url", getenv("ORCA_PUSH_DATABASE_URL"), "PostgreSQL `URL` the emulator runs on (default $ORCA_PUSH_DATABASE_URL)")
	fs.StringVar(&o.emulator, "emulator", "", "emulator `binary` (default: built with go build)")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long to send and inject faults")
	fs.DurationVar(&o.faultEvery, "fault-every", 3*time.Second, "mean time between faults")
	fs.DurationVar(&o.drain, "drain", 4*time.Minute, "how long to wait for every accepted alert to reach a final state")
	fs.IntVar(&o.hosts, "hosts", 4, "hosts, each with an iPhone and an Android phone")
	fs.Float64Var(&o.rate, "rate", 5, "alerts a second, over all hosts")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the fault schedule (0: random)")
	fs.BoolVar(&o.privatePostgres, "private-postgres", false, "run on a private PostgreSQL cluster (initdb, pg_ctl) instead, and restart it among the faults")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case o.databaseURL == "" && !o.privatePostgres:
		return o, fmt.Errorf("%w: -database-url, ORCA_PUSH_DATABASE_URL or -private-postgres is required", errUsage)
	case o.hosts < 1 || o.rate <= 0 || o.duration <= 0 || o.faultEvery <= 0:
		return o, fmt.Errorf("%w: -hosts, -rate, -duration and -fault-every must be positive", errUsage)
	// The quota bounds what one host may send in a window
	// (reference-behaviour §4.3): a refusal would not be a loss, but it
	// would not test one either.
	case o.rate*min(o.duration, contract.QuotaWindow).Seconds()/float64(o.hosts) > contract.AlertQuota:
		return o, fmt.Errorf("%w: more than %d alerts per host in %v; add -hosts", errUsage, contract.AlertQuota, contract.QuotaWindow)
	}
	if o.seed == 0 {
		o.seed = mrand.Uint64()
	}
	return o, nil
}

// run parses args, runs the soak and prints its report on stdout; it
// returns an error when an alert was lost.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "orca-push-soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.emulator == "" {
		o.emulator = filepath.Join(dir, "emulator")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", o.emulator, "onorca.dev/push/scripts/emulator").CombinedOutput(); err != nil {
			return fmt.Errorf("build the emulator: %w: %s", err, out)
		}
	}
	var pg *cluster
	if o.privatePostgres {
		pgDir, err := os.MkdirTemp("", "orca-push-soak-pg")
		if err != nil {
			return err
		}
		defer os.RemoveAll(pgDir)
		if pg, err = startCluster(ctx, pgDir); err != nil {
			return err
		}
		defer pg.stop()
		o.databaseURL = pg.url()
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	em := &emulator{bin: o.emulator, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir,
		databaseURL: o.databaseURL, stderr: stderr}
	if err := em.start(ctx); err != nil {
		return err
	}
	defer em.kill()
	s := &soak{o: o, em: em, pg: pg, r: mrand.New(mrand.NewPCG(o.seed, o.seed+1)), stderr: stderr, clk: clock.Real{},
		procs: []process{{}}}
	if err := s.provision(ctx); err != nil {
		return err
	}
	rep, err := s.soak(ctx)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(rep)
	fmt.Fprintf(stdout, "%s\n", b)
	return rep.verdict()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// hostIP sends a host's requests with a client IP of its own in
// X-Forwarded-For, as real desktops reach the gateway, so that the per-IP
// sign-in bucket meters hosts, not the soak.
type hostIP string

func (ip hostIP) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", string(ip))
	return http.DefaultTransport.RoundTrip(r)
}

// host is one desktop of the fleet and what it sent.
type host struct {
	c      *hostclient.Client
	clk    clock.Clock
	regs   []string // its phones' registration ids
	phones []phone
	// mu guards seq, accepted, unsure and unchecked.
	mu       sync.Mutex
	seq      int64
	accepted []sentAlert // every alert queued for all its phones
	unsure   int         // sends whose answer never came
	// unchecked are the ids of alerts sent without an answer, or queued
	// for some of its phones only: a provider may accept them or not.
	unchecked map[string]bool
}

type soak struct {
	o      options
	em     *emulator
	pg     *cluster    // nil unless -private-postgres
	r      *mrand.Rand // the fault schedule; only the fault loop uses it
	stderr io.Writer
	hosts  []*host
	clk    clock.Clock
	// inboxes are the stand-ins' inboxes read before each kill, in order.
	inboxes [][]delivery
	// procs are the emulator processes' armed faults, in order: the last
	// is the running one.
	procs  []process
	kills  int
	faults map[string]int
	// pgRestarts are when the cluster came back from each restart, in
	// epoch ms: a copy accepted again after one is explained by it.
	pgRestarts []int64
}

// provision signs the hosts in and registers their phones, before any fault.
func (s *soak) provision(ctx context.Context) error {
	for i := range s.o.hosts {
		kp, err := hostclient.GenerateKeypair(rand.Reader)
		if err != nil {
			return err
		}
		hc := &http.Client{Timeout: 15 * time.Second, Transport: hostIP(fmt.Sprintf("198.18.%d.%d", i/256, i%256))}
		c, err := hostclient.New(hostclient.Options{BaseURL: s.em.origin(), Keypair: kp, HTTPClient: hc, Clock: clock.Real{}})
		if err != nil {
			return err
		}
		h := &host{c: c, clk: s.clk, unchecked: make(map[string]bool)}
		phones := []hostclient.RegisterParams{
			{DeviceID: "iphone", Platform: contract.PlatformIOS, Token: fmt.Sprintf("%064x", 1000+i), APNSEnvironment: contract.APNSSandbox},
			{DeviceID: "pixel", Platform: contract.PlatformAndroid, Token: fmt.Sprintf("soak-fcm-token-%040d", i)},
		}
		for _, p := range phones {
			id, err := c.Register(ctx, p)
			if err != nil {
				return fmt.Errorf("register: %w", err)
			}
			provider := standin.FCM
			if p.Platform == contract.PlatformIOS {
				provider = standin.APNS
			}
			h.regs = append(h.regs, id)
			h.phones = append(h.phones, phone{id: id, device: p.DeviceID, token: p.Token, provider: provider})
		}
		s.hosts = append(s.hosts, h)
	}
	return nil
}

// soak sends and injects faults for the duration, drains and checks.
func (s *soak) soak(ctx context.Context) (report, error) {
	sendCtx, stop := context.WithTimeout(ctx, s.o.duration)
	defer stop()
	var wg sync.WaitGroup
	every := time.Duration(float64(time.Second) * float64(len(s.hosts)) / s.o.rate)
	for _, h := range s.hosts {
		wg.Go(func() { h.send(sendCtx, every) })
	}
	s.faults = make(map[string]int)
	sweepCtx, stopSweeps := context.WithCancel(ctx)
	defer stopSweeps()
	go s.sweepEveryMinute(sweepCtx)
	err := s.injectFaults(sendCtx)
	wg.Wait()
	if err != nil {
		return report{}, err
	}
	if err := s.em.control(ctx, "DELETE", "/_emulator/faults", ""); err != nil {
		return report{}, err
	}
	s.procs[len(s.procs)-1].end = s.clk.Now().UnixMilli()
	receipts, err := s.drain(ctx)
	if err != nil {
		return report{}, err
	}
	last, err := s.em.inbox(ctx)
	if err != nil {
		return report{}, err
	}
	inboxes := append(s.inboxes, last)
	f := fates{seed: s.o.seed, kills: s.kills, faults: s.faults, receipts: receipts, inboxes: inboxes,
		windows: faultWindows(s.procs, inboxes), pgRestarts: s.pgRestarts}
	for _, h := range s.hosts {
		f.unsure += h.unsure
		f.hosts = append(f.hosts, fleetHost{phones: h.phones, accepted: h.accepted, unchecked: h.unchecked})
	}
	return check(f), nil
}

// sweepEveryMinute calls the emulator's sweep function each real minute
// until ctx ends, as Cloud Scheduler calls it whatever becomes of the
// instances: the emulator's own minute restarts with each process, and the
// kills come faster. A call that fails (a process being killed) waits for
// the next minute.
func (s *soak) sweepEveryMinute(ctx context.Context) {
	t := time.NewTicker(time.Minute) // a process boundary: real time
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.em.control(ctx, "POST", sweepPath, "")
		}
	}
}

// send sends one alert to both phones every interval until ctx ends.
func (h *host) send(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		h.seq++
		n := contract.Notification{NotificationID: "n" + strconv.FormatInt(h.seq, 10), Seq: h.seq, Epoch: "soak",
			Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished, Title: "soak", Body: "alert"}
		h.mu.Unlock()
		sentAt := h.clk.Now().UnixMilli()
		res, err := h.c.Send(context.WithoutCancel(ctx), h.regs, n)
		a := sentAlert{n: n, sentAt: sentAt, answeredAt: h.clk.Now().UnixMilli()}
		h.mu.Lock()
		switch {
		case err != nil:
			// The process may have died with it: it may or may not
			// have been admitted, so it is not counted either way.
			h.unsure++
			h.unchecked[n.NotificationID] = true
		case len(res) == len(h.regs) && res[0].Status == contract.StatusQueued && res[1].Status == contract.StatusQueued:
			h.accepted = append(h.accepted, a)
		default:
			h.unchecked[n.NotificationID] = true
		}
		h.mu.Unlock()
	}
}
