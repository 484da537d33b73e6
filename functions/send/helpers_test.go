package send_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/functions/devices"
	"onorca.dev/push/functions/hostchallenge"
	"onorca.dev/push/functions/hostsession"
	"onorca.dev/push/functions/send"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/service"
	"onorca.dev/push/shared/store"
)

// start is the manual clock's first reading (2027-01-15).
var start = time.UnixMilli(1_800_000_000_000)

// recorder is a Scheduler that records the batches handed to it.
type recorder struct {
	// mu guards at.
	mu sync.Mutex
	at map[string]int64 // batch id → last due time, epoch ms
}

func (r *recorder) Schedule(_ context.Context, batchID, _ string, at time.Time, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at[batchID] = at.UnixMilli()
	return nil
}

// gateway serves the public routes and /v1/send over s with a manual clock.
type gateway struct {
	svc   *service.Service
	clock *clock.Manual
	sched *recorder
	srv   *httptest.Server
}

// mustGateway serves the host routes and Send over s.
func mustGateway(t testing.TB, s *store.Store) *gateway {
	t.Helper()
	g := &gateway{clock: clock.NewManual(start), sched: &recorder{at: map[string]int64{}}}
	g.srv = httptest.NewUnstartedServer(nil)
	cfg, err := config.Load(func(k string) string {
		if k == "ORCA_PUSH_PUBLIC_URL" {
			return "http://" + g.srv.Listener.Addr().String()
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.PayloadKeys, cfg.DigestKey = sealtest.Ring(t), sealtest.DigestKey(t)
	g.svc, err = service.New(service.Options{
		Config: cfg, Clock: g.clock, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Store: s, Rand: rand.Reader, Scheduler: g.sched,
		APNS: delivery.Unconfigured("apns_not_configured"), FCM: delivery.Unconfigured("fcm_not_configured"),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The routes the tests use, each through its function's Handler.
	mux := http.NewServeMux()
	mux.Handle("/v1/host/challenge", hostchallenge.Handler(g.svc))
	mux.Handle("/v1/host/session", hostsession.Handler(g.svc))
	mux.Handle("/v1/devices", devices.Handler(g.svc))
	mux.Handle("/v1/send", send.Handler(g.svc))
	g.srv.Config.Handler = mux
	g.srv.Start()
	t.Cleanup(g.srv.Close)
	return g
}

// host is a signed-in desktop host.
type host struct {
	*hostclient.Client
	fingerprint string
}

// mustHost returns a new host, signed in.
func (g *gateway) mustHost(t testing.TB) host {
	t.Helper()
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hostclient.New(hostclient.Options{BaseURL: g.srv.URL, Keypair: kp, HTTPClient: g.srv.Client(), Clock: g.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignIn(context.Background()); err != nil {
		t.Fatal(err)
	}
	return host{Client: c, fingerprint: kp.Fingerprint()}
}

// mustDevice registers a phone of h and returns its registration id.
func (h host) mustDevice(t testing.TB, name string) string {
	t.Helper()
	id, err := h.Register(context.Background(), hostclient.RegisterParams{
		DeviceID: name, Platform: contract.PlatformAndroid, Token: strings.Repeat("t", 40) + name,
	})
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	return id
}

// mustDeadDevice registers a phone of h that a provider retired.
func (g *gateway) mustDeadDevice(t testing.TB, h host, name string) string {
	t.Helper()
	id := h.mustDevice(t, name)
	d, err := g.svc.Store.Device(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := g.svc.Store.MarkDeviceDead(context.Background(), d, g.clock.Now().UnixMilli()); err != nil || !ok {
		t.Fatalf("MarkDeviceDead = %v, %v", ok, err)
	}
	return id
}

// post sends body to /v1/send as h and returns the status and body.
func (h host) post(t testing.TB, body []byte) (int, []byte) {
	t.Helper()
	resp, err := h.Raw(context.Background(), http.MethodPost, "/v1/send", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, bytes.TrimSpace(b)
}

// sendBody is a /v1/send body for n to ids.
func sendBody(n contract.Notification, ids ...string) []byte {
	b, _ := json.Marshal(struct {
		V               int                   `json:"v"`
		RegistrationIDs []string              `json:"registrationIds"`
		Notification    contract.Notification `json:"notification"`
	}{1, ids, n})
	return b
}

// mustSend posts n to ids as h and returns the results of the 200.
func (h host) mustSend(t testing.TB, n contract.Notification, ids ...string) []contract.SendResult {
	t.Helper()
	status, body := h.post(t, sendBody(n, ids...))
	if status != http.StatusOK {
		t.Fatalf("send = %d %s, want 200", status, body)
	}
	var resp contract.SendResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("send answer %s: %v", body, err)
	}
	return resp.Results
}

// rowCounts returns every table's row count.
func (g *gateway) rowCounts(t testing.TB) map[string]int64 {
	t.Helper()
	n, err := g.svc.Store.RowCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mustUnchanged fails when a row count differs from before.
func (g *gateway) mustUnchanged(t testing.TB, before map[string]int64) {
	t.Helper()
	if diff := cmp.Diff(before, g.rowCounts(t)); diff != "" {
		t.Errorf("rows changed (-before +after):\n%s", diff)
	}
}

// alert is an agent alert with notificationId id and sequence seq.
func alert(id string, seq int64) contract.Notification {
	return contract.Notification{
		NotificationID: id, Seq: seq, Epoch: "epoch-1", Source: contract.SourceAgentTaskComplete,
		AgentState: contract.AgentNeedsInput, Title: "Agent needs input", Body: "Approve the migration?",
		WorktreeID: "wt-main",
	}
}
