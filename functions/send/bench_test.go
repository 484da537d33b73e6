package send_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"onorca.dev/push/functions/send"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push/pushtest"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/service"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// benchHosts is how many hosts send at once, each from its own goroutine.
const benchHosts = 16

// setParallelism makes b.RunParallel start at least benchHosts goroutines
// and returns how many it starts.
func setParallelism(b *testing.B) int {
	procs := runtime.GOMAXPROCS(0)
	p := (benchHosts + procs - 1) / procs
	b.SetParallelism(p)
	return p * procs
}

// latencies collects per-operation latencies from parallel goroutines.
type latencies struct {
	// mu guards all.
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report reports the median and the 99th percentile in milliseconds, and
// units per second over elapsed.
func (l *latencies) report(b *testing.B, elapsed time.Duration, units int, unit string) {
	slices.Sort(l.all)
	if len(l.all) == 0 {
		return
	}
	at := func(q float64) float64 {
		return float64(l.all[int(q*float64(len(l.all)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(units)/elapsed.Seconds(), unit+"/s")
}

// benchHost is a signed-in host with its registrations.
type benchHost struct {
	bearer string
	ids    []string
}

// mustBenchService returns a service over s with a manual clock and the
// given coalescing window, and benchHosts signed-in hosts with regs phones
// each. Hosts sign in through hostauth directly, clear of the per-IP bucket.
func mustBenchService(b *testing.B, s *store.Store, window time.Duration, hosts, regs int) (*service.Service, *clock.Manual, []benchHost) {
	b.Helper()
	ctx := context.Background()
	clk := clock.NewManual(start)
	const origin = "http://127.0.0.1:1"
	cfg, err := config.Load(func(k string) string {
		if k == "ORCA_PUSH_PUBLIC_URL" {
			return origin
		}
		return ""
	})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Coalesce, cfg.PayloadKeys, cfg.DigestKey = window, sealtest.Ring(b), sealtest.DigestKey(b)
	svc, err := service.New(service.Options{Config: cfg, Clock: clk,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Store: s, Rand: rand.Reader,
		Scheduler: delivery.NopScheduler{}, APNS: delivery.Unconfigured("apns_not_configured"),
		FCM: delivery.Unconfigured("fcm_not_configured")})
	if err != nil {
		b.Fatal(err)
	}
	out := make([]benchHost, hosts)
	for i := range out {
		kp, err := hostclient.GenerateKeypair(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		pub, _ := contract.DecodeKey32(kp.PublicKeyB64())
		c, err := svc.Auth.IssueChallenge(ctx, pub)
		if err != nil {
			b.Fatal(err)
		}
		proof, err := hostclient.Answer(kp, origin, c, clk.Now())
		if err != nil {
			b.Fatal(err)
		}
		sess, err := svc.Auth.CreateSession(ctx, contract.SessionRequest{ChallengeID: c.ChallengeID, ProofB64: proof})
		if err != nil {
			b.Fatal(err)
		}
		out[i].bearer = "Bearer " + sess.SessionToken
		for j := range regs {
			id, err := s.RegisterDevice(ctx, sess.HostFingerprint, contract.RegisterRequest{
				DeviceID: fmt.Sprintf("phone-%d", j), Platform: contract.PlatformAndroid,
				Token: fmt.Sprintf("fcm-token-%040d", j),
			}, clk.Now().UnixMilli())
			if err != nil {
				b.Fatal(err)
			}
			out[i].ids = append(out[i].ids, id)
		}
	}
	return svc, clk, out
}

// quotaPacer keeps one host inside its alert quota: before a send it moves
// the shared clock so that the host's AlertQuota-th latest send has left the
// rolling window. It also keeps the host under its per-minute bucket, which
// is looser.
type quotaPacer struct {
	clk  *clock.Manual
	ring [contract.AlertQuota]int64 // clock after each send, epoch ms
	n    int
}

func (q *quotaPacer) before() {
	if q.n < len(q.ring) {
		return
	}
	oldest := q.ring[q.n%len(q.ring)]
	if wait := oldest + contract.QuotaWindow.Milliseconds() - q.clk.Now().UnixMilli(); wait > 0 {
		q.clk.Advance(time.Duration(wait) * time.Millisecond)
	}
}

func (q *quotaPacer) after() {
	q.ring[q.n%len(q.ring)] = q.clk.Now().UnixMilli()
	q.n++
}

// sendBodyFor returns the body of a typical agent alert with sequence seq
// to ids, with paneKey pane unless pane is empty.
func sendBodyFor(ids []string, seq int, pane string) []byte {
	b := []byte(`{"v":1,"registrationIds":[`)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, id)
	}
	b = append(b, `],"notification":{"notificationId":"agent-task-`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `","notificationSeq":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"notificationEpoch":"3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69","source":"agent-task-complete",`+
		`"agentState":"finished","title":"Refactor finished","body":"Claude finished the refactor of `+
		`shared/store: 14 files changed, all tests pass.","worktreeId":"wt-orca-main"`...)
	if pane != "" {
		b = append(b, `,"paneKey":`...)
		b = strconv.AppendQuote(b, pane)
	}
	return append(b, "}}"...)
}

// benchPaneKey returns a paneKey of paneKeyChars characters starting with
// prefix, in the alphabet of the standard base64 a sealed one uses.
func benchPaneKey(prefix string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := []byte(prefix)
	for i := 0; len(b) < paneKeyChars; i++ {
		b = append(b, alphabet[(i*7)%len(alphabet)])
	}
	return string(b)
}

// paneKeyChars is the length of the paneKey of the pane=400 cases.
const paneKeyChars = 400

// BenchmarkSendAdmission measures POST /v1/send through the real handler
// (edge, bearer lookup, decode, admission, encode) with benchHosts hosts
// sending at once, each from its own goroutine. window=0 makes every alert
// open its own batch (sparse traffic); window=3s is a burst in which alerts
// join their registration's open batch up to 32 members, then flush. One op
// is one request; regs/s counts registrations admitted.
//
// Each case runs again as pane=400, every notification carrying a
// 400-character paneKey (Gen D), to measure what decoding, counting,
// fingerprinting and storing it costs: sealed (e2e1:) with window=0, the
// setting of today's phones, where sealed and unsealed batch alike; unsealed
// with window=3s, so that alerts still join as in the case it is compared
// with (a sealed alert joins nothing).
func BenchmarkSendAdmission(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		for _, window := range []time.Duration{0, contract.DefaultCoalesce} {
			pane := benchPaneKey(contract.SealedPaneKeyPrefix)
			if window != 0 {
				pane = benchPaneKey("pane:")
			}
			for _, regs := range []int{1, 5} {
				name := fmt.Sprintf("%s/window=%v/regs=%d", d.Name, window, regs)
				b.Run(name, func(b *testing.B) { benchSend(b, d, window, regs, "") })
				b.Run(name+"/pane=400", func(b *testing.B) { benchSend(b, d, window, regs, pane) })
			}
		}
	}
}

func benchSend(b *testing.B, d storetest.Dialect, window time.Duration, regs int, pane string) {
	goroutines := setParallelism(b)
	svc, clk, hosts := mustBenchService(b, storetest.Open(b, d), window, goroutines, regs)
	h := send.Handler(svc)
	var next atomic.Int64
	var failed atomic.Int64
	var lat latencies
	b.ReportAllocs()
	b.ResetTimer()
	begin, cpu, machine := time.Now(), pushtest.CPUTime(), pushtest.MachineCPUTime()
	b.RunParallel(func(pb *testing.PB) {
		host := hosts[next.Add(1)-1]
		pace := quotaPacer{clk: clk}
		var mine []time.Duration
		for seq := 0; pb.Next(); seq++ {
			pace.before()
			req := httptest.NewRequest(http.MethodPost, "/v1/send", bytes.NewReader(sendBodyFor(host.ids, seq, pane)))
			req.Header.Set("Authorization", host.bearer)
			rec := httptest.NewRecorder()
			t0 := time.Now()
			h.ServeHTTP(rec, req)
			mine = append(mine, time.Since(t0))
			pace.after()
			if rec.Code != http.StatusOK || bytes.Count(rec.Body.Bytes(), []byte(`"queued"`)) != len(host.ids) {
				failed.Add(1)
			}
		}
		lat.add(mine)
	})
	elapsed, cpu, machine := time.Since(begin), pushtest.CPUTime()-cpu, pushtest.MachineCPUTime()-machine
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests were not all queued", n, b.N)
	}
	lat.report(b, elapsed, b.N*regs, "regs")
	// The gateway process's CPU per request (PostgreSQL's own is not in
	// it): steadier than wall time on a shared machine.
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	// The rest of the machine's CPU in the same time, on a quiet machine
	// the database server's (and the kernel's work for it).
	b.ReportMetric(float64(machine-cpu)/float64(b.N), "db-cpu-ns/op")
	// Requests whose shared transaction failed ran again alone: a share
	// that grows means groups cost more than they save.
	b.ReportMetric(float64(svc.Counters.Consume()[obs.SharedTxFailed]), "shared-failed")
}

// BenchmarkInsertCeiling is the ceiling admission is measured against: the
// smallest single-row insert transaction (BEGIN, one INSERT, COMMIT) on the
// same database at the same concurrency, through the same store, so on
// PostgreSQL it is one pipelined round trip, as cheap as an autocommit
// INSERT.
func BenchmarkInsertCeiling(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(d.Name, func(b *testing.B) {
			setParallelism(b)
			s := storetest.Open(b, d)
			ctx := context.Background()
			var next atomic.Int64
			runTimed(b, "tx", func() func() error {
				return func() error {
					fp := "host-" + strconv.FormatInt(next.Add(1), 10)
					return s.Tx(ctx, func(tx *store.Tx) error { return tx.TouchHost(ctx, fp, "key", 1) })
				}
			})
		})
	}
}

// BenchmarkBearerLookup is the part of every request admission cannot
// pipeline: the bearer's session read, which names the host before anything
// else can run, at the same concurrency as BenchmarkSendAdmission.
func BenchmarkBearerLookup(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(d.Name, func(b *testing.B) {
			goroutines := setParallelism(b)
			svc, _, hosts := mustBenchService(b, storetest.Open(b, d), 0, goroutines, 1)
			ctx := context.Background()
			var next atomic.Int64
			runTimed(b, "lookups", func() func() error {
				token := strings.TrimPrefix(hosts[next.Add(1)-1].bearer, "Bearer ")
				return func() error {
					_, err := svc.Auth.Lookup(ctx, token)
					return err
				}
			})
		})
	}
}

// runTimed runs b.N operations from parallel goroutines, each made by
// newOp once per goroutine, times every one, and reports the median and
// 99th percentile latency and unit/s.
func runTimed(b *testing.B, unit string, newOp func() func() error) {
	var lat latencies
	b.ResetTimer()
	begin := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		op := newOp()
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			err := op()
			mine = append(mine, time.Since(t0))
			if err != nil {
				b.Error(err)
				return
			}
		}
		lat.add(mine)
	})
	elapsed := time.Since(begin)
	b.StopTimer()
	lat.report(b, elapsed, b.N, unit)
}
