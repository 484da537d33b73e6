package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/clock"
)

// coalesceMs is the tests' emulator window, short so deliveries come soon.
const coalesceMs = "250"

func getenv(k string) string {
	if k == "ORCA_PUSH_COALESCE_MS" {
		return coalesceMs
	}
	return ""
}

// output is what one run of the tool printed: its human lines and its JSON
// reports by kind.
type output struct {
	human      []string
	open       []openReport
	closed     []closedReport
	deliveries []deliveriesReport
}

// mustRun runs the tool in-process with args and parses what it printed.
func mustRun(t *testing.T, args ...string) output {
	t.Helper()
	var b bytes.Buffer
	err := run(context.Background(), args, getenv, &b)
	t.Logf("load %s:\n%s", strings.Join(args, " "), b.String())
	if err != nil {
		t.Fatalf("run = %v", err)
	}
	var out output
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if !strings.HasPrefix(line, "{") {
			out.human = append(out.human, line)
			continue
		}
		var kind struct{ Mode string }
		var err error
		if err = json.Unmarshal([]byte(line), &kind); err == nil {
			switch kind.Mode {
			case "open":
				out.open = append(out.open, openReport{})
				err = json.Unmarshal([]byte(line), &out.open[len(out.open)-1])
			case "closed":
				out.closed = append(out.closed, closedReport{})
				err = json.Unmarshal([]byte(line), &out.closed[len(out.closed)-1])
			case "deliveries":
				out.deliveries = append(out.deliveries, deliveriesReport{})
				err = json.Unmarshal([]byte(line), &out.deliveries[len(out.deliveries)-1])
			}
		}
		if err != nil {
			t.Fatalf("report %s: %v", line, err)
		}
	}
	return out
}

// checkLatency fails unless the percentiles are ordered and not all zero.
func checkLatency(t *testing.T, what string, l latency) {
	t.Helper()
	if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("%s latency %+v: want 0 < p50 ≤ p90 ≤ p99 ≤ p99.9 ≤ max", what, l)
	}
}

// checkDeliveries fails unless every queued alert reached a stand-in once,
// and failed provider requests were counted apart.
func checkDeliveries(t *testing.T, out output, want int64, failed int) {
	t.Helper()
	if len(out.deliveries) != 1 {
		t.Fatalf("deliveries reports = %d, want 1", len(out.deliveries))
	}
	d := out.deliveries[0]
	if d.Expected != want || d.Delivered != want || d.Failed != failed || d.Accepted == 0 {
		t.Errorf("deliveries = %+v, want %d expected and delivered, %d failed", d, want, failed)
	}
}

// TestOpenLoop runs the open loop against the emulator at 20 requests/s with
// 1 and 5 registrations, with some sends answered 503 busy after the
// gateway served them and the first two APNs requests failed: every
// scheduled request is measured and succeeds (hostclient retried each busy
// one), each alert is delivered once, and the failed provider requests are
// counted apart from the deliveries.
func TestOpenLoop(t *testing.T) {
	f := mustEmulator(t, "ORCA_PUSH_COALESCE_MS="+coalesceMs)
	f.arm(0, 0, 7)
	f.fault(t, `{"provider":"apns","token":"*","status":503,"reason":"ServiceUnavailable","times":2}`)
	out := mustRun(t, "open", "-gateway", f.origin(), "-rate", "20", "-duration", "1s", "-warmup", "500ms", "-regs", "1,5",
		"-hosts", "2", "-stagger", "0", "-timeline")
	if len(out.open) != 2 {
		t.Fatalf("open reports = %d, want 2", len(out.open))
	}
	var busy int64
	inSecond := 0
	for i, k := range []int{1, 5} {
		r := out.open[i]
		want := openReport{Mode: "open", Registrations: k, Hosts: 2, OfferedRate: 20, DurationS: 1,
			stats: stats{Requests: 20, OK: 20, Errors: map[string]int{}}}
		got := r
		got.Latency, got.AchievedRate, got.Throughput, got.LateStarts, got.MaxStartLagMs, got.BusyAnswers = latency{}, 0, 0, 0, 0, 0
		got.Timeline, got.costs = nil, costs{}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(openReport{})); diff != "" {
			t.Errorf("open report for %d registrations (-want +got):\n%s", k, diff)
		}
		// Counted costs: every push is a task created and dispatched at
		// least (more for the failed attempts), and every k of them at
		// least one send and k delivers.
		if c := r.costs; c.DeliveredPerSecond <= 0 || c.TaskOpsPerPush == nil || *c.TaskOpsPerPush < 2 || c.RequestsPerPush < 1+1/float64(k) {
			t.Errorf("costs %+v, want deliveries per second > 0, ≥ 2 task operations and ≥ %.2f requests per push", c, 1+1/float64(k))
		}
		if r.AchievedRate <= 0 || r.Throughput <= 0 {
			t.Errorf("achieved rate %v, throughput %v; want both > 0", r.AchievedRate, r.Throughput)
		}
		checkLatency(t, "open", r.Latency)
		// Each report's line, then its one second's.
		if h := out.human[2*i]; !strings.HasPrefix(h, fmt.Sprintf("open regs=%d hosts=", k)) {
			t.Errorf("human line %q, want it to start with open regs=%d hosts=", h, k)
		}
		if h := out.human[2*i+1]; !strings.HasPrefix(h, fmt.Sprintf("open regs=%d second=0 requests=20 errors=0 provider=", k)) {
			t.Errorf("human line %q, want the measured second of %d registrations with its provider requests", h, k)
		}
		busy += r.BusyAnswers
		// The provider requests of the measured second: some (a batch is
		// due every 250 ms), and fewer than the run's, whose warm-up and
		// last windows' deliveries fall outside it.
		if len(r.Timeline) != 1 || r.Timeline[0].ProviderRequests == 0 {
			t.Errorf("timeline %+v, want one second with provider requests", r.Timeline)
		} else {
			inSecond += r.Timeline[0].ProviderRequests
		}
	}
	if d := out.deliveries; len(d) == 1 && inSecond >= d[0].Accepted+d[0].Failed {
		t.Errorf("provider requests in the measured seconds = %d, want fewer than the run's %d", inSecond, d[0].Accepted+d[0].Failed)
	}
	if _, answered := f.counts(); answered == 0 || busy != int64(answered) {
		t.Errorf("busy answers seen by the tool = %d, answered by the front = %d; want equal and > 0", busy, answered)
	}
	// (10 warm-up + 20 measured) requests, with 1 and then 5 registrations.
	checkDeliveries(t, out, 30*1+30*5, 2)
}

// TestClosedLoop runs the closed loop at two concurrencies and checks that
// it reports each step and the highest rate among them.
func TestClosedLoop(t *testing.T) {
	f := mustEmulator(t, "ORCA_PUSH_COALESCE_MS="+coalesceMs)
	out := mustRun(t, "closed", "-gateway", f.origin(), "-regs", "1", "-concurrency", "1,2", "-duration", "1s",
		"-warmup", "200ms", "-hosts", "20")
	if len(out.closed) != 1 {
		t.Fatalf("closed reports = %d, want 1", len(out.closed))
	}
	r := out.closed[0]
	if r.Mode != "closed" || r.Registrations != 1 || r.Hosts != 20 || len(r.Steps) != 2 {
		t.Fatalf("closed report = %+v", r)
	}
	best := closedStep{}
	for i, s := range r.Steps {
		if s.Concurrency != i+1 || s.Requests == 0 || s.OK != s.Requests || len(s.Errors) != 0 || s.Truncated || s.Rate <= 0 {
			t.Errorf("step %d = %+v, want concurrency %d, every request ok", i, s, i+1)
		}
		checkLatency(t, "closed", s.Latency)
		if s.Rate > best.Rate {
			best = s
		}
	}
	if r.MaxRate != best.Rate || r.MaxAt != best.Concurrency {
		t.Errorf("maximum = %v at %d, want %v at %d", r.MaxRate, r.MaxAt, best.Rate, best.Concurrency)
	}
	var queued int64
	for _, s := range r.Steps {
		queued += int64(s.OK)
	}
	// Warm-up requests are queued too, but not counted in the steps.
	if d := out.deliveries; len(d) != 1 || d[0].Expected < queued || d[0].Delivered != d[0].Expected || d[0].Failed != 0 {
		t.Errorf("deliveries = %+v, want every queued alert (at least %d) delivered once", d, queued)
	}
}

// TestOpenLoopShowsStall: the gateway stops answering sends for a second.
// The open loop keeps its schedule: it starts the next request while the
// first is held (up to its max-inflight of 2), and it measures each request
// from its scheduled start, so every request due in the first half of the
// stall counts at least stall/2, even those that could not start on time:
// at 40/s that is at least 20 of 80 measured requests, so p90 ≥ stall/2
// and max ≥ stall. A closed loop with one worker sends nothing while its
// request is held: one request sees the stall, and the rest of its
// distribution hides it.
func TestOpenLoopShowsStall(t *testing.T) {
	const stall = time.Second
	ms := float64(stall / time.Millisecond)
	f := mustEmulator(t, "ORCA_PUSH_COALESCE_MS="+coalesceMs)
	f.arm(10+8, stall, 0) // the 8th measured send, after 10 of warm-up
	out := mustRun(t, "open", "-gateway", f.origin(), "-rate", "40", "-duration", "2s", "-warmup", "250ms", "-regs", "1",
		"-max-inflight", "2", "-deliveries=false", "-hosts", "4", "-timeline", "-stagger", "0")
	if len(out.open) != 1 {
		t.Fatalf("open reports = %d, want 1", len(out.open))
	}
	open := out.open[0]
	if open.Requests != 80 || open.OK != 80 || open.Latency.Max < ms || open.Latency.P90 < ms/2 {
		t.Errorf("open loop through a %v stall: %d requests, %d ok, latency %+v; want 80 ok, max ≥ %v ms, p90 ≥ %v ms",
			stall, open.Requests, open.OK, open.Latency, ms, ms/2)
	}
	// The timeline puts the stall in the first second, where the stalled
	// request was due, and counts every request in one second or the other.
	if tl := open.Timeline; len(tl) != 2 || tl[0].Requests+tl[1].Requests != 80 || tl[0].Latency.Max < ms ||
		!slices.ContainsFunc(out.human, func(l string) bool { return strings.HasPrefix(l, "open regs=1 second=1 requests=40 ") }) {
		t.Errorf("timeline %+v, human lines %q: want two seconds of 40 requests, the first with max ≥ %v ms", tl, out.human, ms)
	}
	if openHeld, _ := f.counts(); openHeld != 2 {
		t.Errorf("sends the open loop made during the stall = %d, want 2 (its max-inflight)", openHeld)
	}

	f.arm(5, stall, 0)
	out = mustRun(t, "closed", "-gateway", f.origin(), "-regs", "1", "-concurrency", "1", "-duration", "1s",
		"-warmup", "0s", "-hosts", "4", "-deliveries=false")
	closedHeld, _ := f.counts()
	if closedHeld != 1 {
		t.Errorf("sends the closed loop made during the stall = %d, want 1", closedHeld)
	}
	s := out.closed[0].Steps[0]
	t.Logf("stall of %v: open loop p90 %.1f ms, %d started late; the closed loop sent 1 of %d requests into it, p90 %.1f ms",
		stall, open.Latency.P90, open.LateStarts, s.Requests, s.Latency.P90)
}

// TestOpenLoopStaggersHosts: with -stagger, host h sends nothing due before
// stagger·u(h), u(h) the fractional part of h·0.618…, so the hosts' first
// alerts, and their registrations' coalescing windows, are spread over the
// stagger; with -stagger 0 every host sends in the first round. Request j,
// due at j/rate, goes to host j mod n, and is the notificationSeq the front
// notes, so what is sent follows from the schedule alone, whatever the
// timing.
func TestOpenLoopStaggersHosts(t *testing.T) {
	f := mustEmulator(t, "ORCA_PUSH_COALESCE_MS="+coalesceMs)
	tests := []struct {
		stagger string
		// first[h] is host h's first request: at 40/s each is due 25 ms
		// after the one before; with 1 s, hosts 0 to 3 join at 0, 618,
		// 236 and 854 ms, so their first requests are due at 0, 625, 250
		// and 875 ms.
		first []int64
	}{
		{"1s", []int64{0, 25, 10, 35}},
		{"0", []int64{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		f.arm(0, 0, 0)
		out := mustRun(t, "open", "-gateway", f.origin(), "-rate", "40", "-duration", "500ms", "-warmup", "250ms",
			"-regs", "1", "-hosts", "4", "-deliveries=false", "-stagger", tt.stagger)
		var got []int64
		firsts := f.firsts()
		for h := range 4 {
			seq, ok := firsts[fmt.Sprintf("198.18.0.%d", h)]
			if !ok {
				seq = -1
			}
			got = append(got, seq)
		}
		if !slices.Equal(got, tt.first) {
			t.Errorf("-stagger %s: each host's first request = %v, want %v", tt.stagger, got, tt.first)
		}
		stagger, err := time.ParseDuration(tt.stagger)
		if err != nil {
			t.Fatal(err)
		}
		if r := out.open[0]; r.Requests != 20 || r.OK != 20 || r.StaggerS != stagger.Seconds() {
			t.Errorf("-stagger %s: measured %d requests, %d ok, staggerS %v; want 20 of 20 and %v", tt.stagger, r.Requests,
				r.OK, r.StaggerS, stagger.Seconds())
		}
	}
}

// TestLone: each lone alert is delivered alone and measured from its
// accepted delivery; a failed provider request is counted apart and its
// alert counts once delivered by the retry.
func TestLone(t *testing.T) {
	f := mustEmulator(t, "ORCA_PUSH_COALESCE_MS="+coalesceMs)
	f.fault(t, `{"provider":"apns","token":"*","status":503,"reason":"ServiceUnavailable","times":1}`)
	var b bytes.Buffer
	if err := run(context.Background(), []string{"lone", "-gateway", f.origin(), "-hosts", "2", "-alerts", "2"}, getenv, &b); err != nil {
		t.Fatalf("run = %v\n%s", err, b.String())
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var r loneReport
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &r) != nil {
		t.Fatalf("output %q, want a human line and a JSON report", b.String())
	}
	got := r
	got.Latency = latency{}
	if diff := cmp.Diff(loneReport{Mode: "lone", Hosts: 2, Alerts: 4, Delivered: 4, ProviderFailed: 1}, got); diff != "" {
		t.Errorf("lone report (-want +got):\n%s", diff)
	}
	if l := r.Latency; !(l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("latency %+v not ordered", l)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want error
	}{
		{"no mode", nil, errUsage},
		{"flag first", []string{"-rate", "1"}, errUsage},
		{"unknown mode", []string{"soak"}, errUsage},
		{"open without rate", []string{"open"}, errUsage},
		{"open with no request", []string{"open", "-rate", "0.5", "-duration", "1s"}, errUsage},
		{"regs over the request cap", []string{"open", "-rate", "1", "-regs", "21"}, errUsage},
		{"extra argument", []string{"closed", "now"}, errUsage},
		{"too few hosts for the quota", []string{"open", "-rate", "10", "-duration", "60s", "-hosts", "1"}, errUsage},
		{"too few hosts for the bucket", []string{"open", "-rate", "20", "-duration", "1s", "-hosts", "1"}, errUsage},
		{"too few hosts for the stagger too", []string{"open", "-rate", "10", "-duration", "28s", "-warmup", "0s", "-stagger", "3s", "-regs", "1", "-hosts", "1"}, errUsage},
		{"negative stagger", []string{"open", "-rate", "1", "-stagger", "-1s"}, errUsage},
		{"help", []string{"-h"}, flag.ErrHelp},
		{"mode help", []string{"open", "-h"}, flag.ErrHelp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := run(context.Background(), tt.args, getenv, &b); !errors.Is(err, tt.want) {
				t.Fatalf("run(%q) = %v, want %v", tt.args, err, tt.want)
			}
		})
	}
}

// TestWaitReady: the tool retries GET /health until it answers 200, so it
// can be started together with the emulator, and gives up after -ready.
func TestWaitReady(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" || calls.Add(1) < 4 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	var b bytes.Buffer
	tg := newTarget(srv.URL, 1, clock.Real{}, &b)
	if err := tg.waitReady(context.Background(), time.Minute); err != nil || calls.Load() != 4 {
		t.Fatalf("waitReady = %v after %d calls, want nil after 4", err, calls.Load())
	}
	srv.Close()
	if err := tg.waitReady(context.Background(), 200*time.Millisecond); err == nil {
		t.Fatal("waitReady on a closed server = nil, want an error")
	}
}

func TestHostsFor(t *testing.T) {
	tests := []struct {
		rate, total float64
		want        int
	}{
		{1, 1, 1},
		{20, 60, 2},        // 10 requests/s per host
		{10, 301, 2},       // the 301st alert needs a second host
		{1000, 30000, 100}, // both bounds meet
		{100, 90300, 301},
	}
	for _, tt := range tests {
		if got := hostsFor(tt.rate, tt.total); got != tt.want {
			t.Errorf("hostsFor(%v, %v) = %d, want %d", tt.rate, tt.total, got, tt.want)
		}
	}
}

func TestRank(t *testing.T) {
	v := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	got := summarize(v)
	want := latency{P50: 5, P90: 9, P99: 10, P999: 10, Max: 10}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summarize (-want +got):\n%s", diff)
	}
	if got := summarize(nil); got != (latency{}) {
		t.Errorf("summarize(nil) = %+v, want zeros", got)
	}
}

// TestBySecond puts each record in the second of the schedule it was due
// in, at a rate that does not divide a second, and tallies each second.
func TestBySecond(t *testing.T) {
	t0 := time.Unix(0, 0)
	var recs []record
	for j := range 6 {
		r := record{start: t0, done: t0.Add(time.Duration(j+1) * time.Millisecond)}
		if j == 4 {
			r.fail = "http_500"
		}
		recs = append(recs, r)
	}
	var got [][2]int
	for _, s := range bySecond(recs, 2.5) { // due at 0, 0.4, 0.8, 1.2, 1.6 and 2.0 s
		got = append(got, [2]int{s.Requests, s.OK})
	}
	if want := [][2]int{{3, 3}, {2, 1}, {1, 1}}; !slices.Equal(got, want) {
		t.Errorf("bySecond requests, ok = %v, want %v", got, want)
	}
}

// TestOpenLoopCostsInline holds the goals of issue "past one queue" through
// the emulator process, as the load tool counts them: with no coalescing
// and inline delivery (production's settings), at most 0.5 Cloud Tasks
// operations and 1.3 function requests per delivered push.
func TestOpenLoopCostsInline(t *testing.T) {
	f := mustEmulator(t, "ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_DELIVER_INLINE=1")
	out := mustRun(t, "open", "-gateway", f.origin(), "-rate", "20", "-duration", "1s", "-warmup", "500ms", "-regs", "1",
		"-hosts", "2", "-stagger", "0", "-window", "0s")
	if len(out.open) != 1 {
		t.Fatalf("open reports = %d, want 1", len(out.open))
	}
	c := out.open[0].costs
	if c.DeliveredPerSecond <= 0 || c.TaskOpsPerPush == nil || *c.TaskOpsPerPush > 0.5 || c.RequestsPerPush > 1.3 || c.RequestsPerPush < 1 {
		t.Fatalf("costs %+v, want deliveries, at most 0.5 task operations and 1..1.3 requests per push", c)
	}
	checkDeliveries(t, out, 30, 0)
}
