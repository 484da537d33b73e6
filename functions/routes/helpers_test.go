package routes_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/functions/routes"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/service"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// start is a fixed epoch for the manual clock (2027-01-15).
var start = time.UnixMilli(1_800_000_000_000)

type gateway struct {
	ips   atomic.Int64
	svc   *service.Service
	clock *clock.Manual
	srv   *httptest.Server
}

// mustGateway serves every public route on a fresh database of d, with a
// manual clock.
func mustGateway(t testing.TB, d storetest.Dialect) *gateway {
	t.Helper()
	return mustGatewayOn(t, d.Options(t))
}

// mustGatewayOn serves every public route on the database opts names.
func mustGatewayOn(t testing.TB, opts store.Options) *gateway {
	t.Helper()
	return mustGatewayLogging(t, opts, io.Discard)
}

// mustGatewayLogging is mustGatewayOn with the structured log (the counters
// lines) written to stdout, as a deployed function writes it.
func mustGatewayLogging(t testing.TB, opts store.Options, stdout io.Writer) *gateway {
	t.Helper()
	clk := clock.NewManual(start)
	srv := httptest.NewUnstartedServer(nil)
	cfg, err := config.Load(func(k string) string {
		if k == "ORCA_PUSH_PUBLIC_URL" {
			return "http://" + srv.Listener.Addr().String()
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DatabaseURL, cfg.DataDir, cfg.PoolMax = opts.DatabaseURL, opts.DataDir, opts.PoolMax
	cfg.PayloadKeys, cfg.DigestKey = sealtest.Ring(t), sealtest.DigestKey(t)
	st, err := service.OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Options{
		Config: cfg, Clock: clk, Log: obs.NewLogger(stdout), Store: st, Rand: rand.Reader,
		Scheduler: delivery.NopScheduler{}, APNS: delivery.Unconfigured("apns_not_configured"),
		FCM: delivery.Unconfigured("fcm_not_configured"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	srv.Config.Handler = routes.Public(svc)
	srv.Start()
	t.Cleanup(srv.Close)
	return &gateway{svc: svc, clock: clk, srv: srv}
}

// mustHost returns a signed-out host client of a new key pair.
func (g *gateway) mustHost(t testing.TB) *hostclient.Client {
	t.Helper()
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return g.mustHostOf(t, kp)
}

// mustHostOf returns a signed-out host client of kp.
func (g *gateway) mustHostOf(t testing.TB, kp hostclient.Keypair) *hostclient.Client {
	t.Helper()
	c, err := hostclient.New(hostclient.Options{BaseURL: g.srv.URL, Keypair: kp, HTTPClient: g.srv.Client(), Clock: g.clock})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// do sends a raw request and returns the status and body.
func (g *gateway) do(t testing.TB, method, path, body string, header http.Header) (int, string) {
	t.Helper()
	status, b, _ := g.doHeader(t, method, path, body, header, "")
	return status, b
}

// doHeader is do that also returns the answer's header name.
func (g *gateway) doHeader(t testing.TB, method, path, body string, header http.Header, name string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, g.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := g.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header.Get(name)
}

// rowCounts returns every table's row count.
func (g *gateway) rowCounts(t *testing.T) map[string]int64 {
	t.Helper()
	n, err := g.svc.Store.RowCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (g *gateway) mustUnchanged(t *testing.T, before map[string]int64) {
	t.Helper()
	if diff := cmp.Diff(before, g.rowCounts(t)); diff != "" {
		t.Fatalf("rows changed (-before +after):\n%s", diff)
	}
}

// freshIP returns an X-Forwarded-For header of a client IP not used before,
// so that tests making many unauthenticated calls stay clear of the per-IP
// bucket they do not test.
func (g *gateway) freshIP() http.Header {
	n := g.ips.Add(1)
	return http.Header{"X-Forwarded-For": {fmt.Sprintf("198.51.%d.%d", n/256, n%256)}}
}

func bearerHeader(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}
