package hostclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

const iosToken = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

// notification is a valid alert.
func notification() contract.Notification {
	silent := false
	return contract.Notification{
		NotificationID: "n-1",
		Seq:            7,
		Epoch:          "epoch-1",
		Source:         contract.SourceAgentTaskComplete,
		Sound:          &silent,
		AgentState:     contract.AgentNeedsInput,
		Title:          "Agent <needs> you & more",
		Body:           "Line one\nline two",
		WorktreeID:     "wt-1",
	}
}

func TestNew(t *testing.T) {
	kp := mustKeypairFrom(t, 0x07)
	good := hostclient.Options{BaseURL: "http://127.0.0.1:1", Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}}
	if _, err := hostclient.New(good); err != nil {
		t.Fatalf("New(complete options) error: %v", err)
	}
	tests := []struct {
		name   string
		modify func(*hostclient.Options)
	}{
		{"no BaseURL", func(o *hostclient.Options) { o.BaseURL = "" }},
		{"no Keypair", func(o *hostclient.Options) { o.Keypair = hostclient.Keypair{} }},
		{"no HTTPClient", func(o *hostclient.Options) { o.HTTPClient = nil }},
		{"no Clock", func(o *hostclient.Options) { o.Clock = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.modify(&o)
			if c, err := hostclient.New(o); err == nil {
				t.Errorf("New() = %v, nil; want an error", c)
			}
		})
	}
}

// TestClientFlow signs in lazily once and runs every route.
func TestClientFlow(t *testing.T) {
	g, c := mustGateway(t)
	ctx := t.Context()
	if token, exp := c.Session(); token != "" || exp != 0 {
		t.Fatalf("Session() before sign-in = %q, %d; want empty", token, exp)
	}
	ios, err := c.Register(ctx, hostclient.RegisterParams{DeviceID: "phone-1", Platform: contract.PlatformIOS, Token: iosToken, APNSEnvironment: contract.APNSSandbox})
	if err != nil {
		t.Fatalf("Register(ios) error: %v", err)
	}
	android, err := c.Register(ctx, hostclient.RegisterParams{
		DeviceID: "phone-2",
		Platform: contract.PlatformAndroid,
		Token:    strings.Repeat("f", 40),
		Filter:   &contract.Filter{Sources: []string{"terminal-bell"}, AgentStates: []string{"finished"}},
	})
	if err != nil {
		t.Fatalf("Register(android) error: %v", err)
	}
	token, exp := c.Session()
	if token == "" || exp != nowMs+contract.SessionTTL.Milliseconds() {
		t.Errorf("Session() = %q, %d; want a token expiring at %d", token, exp, nowMs+contract.SessionTTL.Milliseconds())
	}

	got, err := c.Devices(ctx)
	if err != nil {
		t.Fatalf("Devices() error: %v", err)
	}
	want := []contract.Device{
		{RegistrationID: ios, DeviceID: "phone-1", Platform: contract.PlatformIOS},
		{RegistrationID: android, DeviceID: "phone-2", Platform: contract.PlatformAndroid},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Devices() mismatch (-want +got):\n%s", diff)
	}

	results, err := c.Send(ctx, []string{ios, android}, notification())
	if err != nil {
		t.Fatalf("Send() error: %v", err)
	}
	wantResults := []contract.SendResult{{RegistrationID: ios, Status: contract.StatusQueued}, {RegistrationID: android, Status: contract.StatusQueued}}
	if diff := cmp.Diff(wantResults, results); diff != "" {
		t.Errorf("Send() mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]contract.Notification{notification()}, g.snapshot().sent); diff != "" {
		t.Errorf("notification as the gateway decoded it (-want +got):\n%s", diff)
	}

	if err := c.Delete(ctx, ios); err != nil {
		t.Fatalf("Delete(%q) error: %v", ios, err)
	}
	err = c.Delete(ctx, ios)
	var apiErr *hostclient.APIError
	if !errors.As(err, &apiErr) || *apiErr != (hostclient.APIError{Status: http.StatusNotFound, Code: "not_found"}) {
		t.Errorf("Delete(deleted) error = %v, want APIError 404 not_found", err)
	}
	if !errors.Is(err, contract.ErrNotFound) || errors.Is(err, contract.ErrInvalidToken) {
		t.Errorf("Delete(deleted) error = %v, want it to match contract.ErrNotFound only", err)
	}
	if g.snapshot().signIns != 1 {
		t.Errorf("sign-ins = %d, want 1", g.snapshot().signIns)
	}
}

// TestClientSignsInAgain checks the one re-sign-in on each 401 a desktop
// re-authenticates on.
func TestClientSignsInAgain(t *testing.T) {
	tests := []struct {
		name string
		lose func(*fakeGateway)
	}{
		{"invalid_token", (*fakeGateway).dropSessions},
		{"session_expired", func(g *fakeGateway) { g.clock.Advance(contract.SessionTTL + time.Millisecond) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, c := mustGateway(t)
			if err := c.SignIn(t.Context()); err != nil {
				t.Fatalf("SignIn() error: %v", err)
			}
			old, _ := c.Session()
			tt.lose(g)
			if _, err := c.Devices(t.Context()); err != nil {
				t.Fatalf("Devices() error: %v", err)
			}
			if g.snapshot().signIns != 2 || g.count("GET /v1/devices") != 2 {
				t.Errorf("sign-ins = %d, device lists = %d; want 2, 2", g.snapshot().signIns, g.count("GET /v1/devices"))
			}
			if now, _ := c.Session(); now == old {
				t.Errorf("Session() kept the refused token")
			}
		})
	}
}

// TestClientRetriesOnce checks that a call refused again after signing in
// again fails rather than looping.
func TestClientRetriesOnce(t *testing.T) {
	g, c := mustGateway(t)
	g.force("GET /v1/devices", contract.ErrSessionExpired)
	_, err := c.Devices(t.Context())
	if !errors.Is(err, contract.ErrSessionExpired) {
		t.Fatalf("Devices() error = %v, want %v", err, contract.ErrSessionExpired)
	}
	if g.snapshot().signIns != 2 || g.count("GET /v1/devices") != 2 {
		t.Errorf("sign-ins = %d, device lists = %d; want 2, 2", g.snapshot().signIns, g.count("GET /v1/devices"))
	}
}

// TestClientErrors checks that other refusals are returned as APIError
// without signing in again.
func TestClientErrors(t *testing.T) {
	tests := []struct {
		route string
		err   *contract.Error
		call  func(context.Context, *hostclient.Client) error
	}{
		{"POST /v1/devices", contract.ErrTooManyDevices, func(ctx context.Context, c *hostclient.Client) error {
			_, err := c.Register(ctx, hostclient.RegisterParams{DeviceID: "phone-65", Platform: contract.PlatformIOS, Token: iosToken, APNSEnvironment: contract.APNSProduction})
			return err
		}},
		{"POST /v1/send", contract.ErrRateLimited, func(ctx context.Context, c *hostclient.Client) error {
			_, err := c.Send(ctx, []string{"reg-1"}, notification())
			return err
		}},
		{"GET /v1/devices", contract.ErrInternal, func(ctx context.Context, c *hostclient.Client) error {
			_, err := c.Devices(ctx)
			return err
		}},
		{"POST /v1/host/session", contract.ErrInvalidProof, func(ctx context.Context, c *hostclient.Client) error {
			return c.SignIn(ctx)
		}},
		{"POST /v1/host/challenge", contract.ErrRateLimited, func(ctx context.Context, c *hostclient.Client) error {
			_, err := c.Devices(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.route+" "+tt.err.Code, func(t *testing.T) {
			g, c := mustGateway(t)
			g.force(tt.route, tt.err)
			err := tt.call(t.Context(), c)
			var apiErr *hostclient.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != tt.err.Status || apiErr.Code != tt.err.Code {
				t.Fatalf("error = %v, want APIError %d %s", err, tt.err.Status, tt.err.Code)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("errors.Is(%v, %v) = false, want true", err, tt.err)
			}
			if g.count(tt.route) != 1 {
				t.Errorf("%s requests = %d, want 1", tt.route, g.count(tt.route))
			}
		})
	}
}

func TestClientNonJSONError(t *testing.T) {
	g, _ := mustGateway(t)
	c, err := hostclient.New(hostclient.Options{
		BaseURL:    g.url + "/nowhere", // the mux answers a plain-text 404
		Keypair:    mustKeypairFrom(t, 0x07),
		HTTPClient: http.DefaultClient,
		Clock:      g.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Devices(t.Context())
	var apiErr *hostclient.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound || apiErr.Code != "" {
		t.Fatalf("Devices() error = %v, want APIError 404 with no code", err)
	}
}

func TestClientSignInChecksChallenge(t *testing.T) {
	g, _ := mustGateway(t)
	c, err := hostclient.New(hostclient.Options{
		BaseURL:    g.url,
		Origin:     "https://push.onorca.dev",
		Keypair:    mustKeypairFrom(t, 0x07),
		HTTPClient: http.DefaultClient,
		Clock:      g.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.SignIn(t.Context())
	var oe *hostclient.OriginError
	if !errors.Is(err, hostclient.ErrOrigin) || !errors.As(err, &oe) {
		t.Fatalf("SignIn() against another origin error = %v, want %v", err, hostclient.ErrOrigin)
	}
	// The error names both, so a localhost vs 127.0.0.1 mix-up explains itself.
	if want := (hostclient.OriginError{Expected: "https://push.onorca.dev", Received: g.url}); *oe != want {
		t.Errorf("OriginError = %+v, want %+v", *oe, want)
	}
	if g.count("POST /v1/host/session") != 0 {
		t.Errorf("the client answered a challenge it refused")
	}
}

func TestClientSendChunks(t *testing.T) {
	tests := []struct {
		ids  int
		want []int
	}{
		{0, nil},
		{1, []int{1}},
		{contract.MaxRegistrationIDs, []int{20}},
		{contract.MaxRegistrationIDs + 1, []int{20, 1}},
		{45, []int{20, 20, 5}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.ids), func(t *testing.T) {
			g, c := mustGateway(t)
			var ids []string
			var want []contract.SendResult
			for i := range tt.ids {
				ids = append(ids, fmt.Sprintf("reg-%02d", i))
				want = append(want, contract.SendResult{RegistrationID: ids[i], Status: contract.StatusQueued})
			}
			got, err := c.Send(t.Context(), ids, notification())
			if err != nil {
				t.Fatalf("Send(%d ids) error: %v", tt.ids, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Send(%d ids) mismatch (-want +got):\n%s", tt.ids, diff)
			}
			if diff := cmp.Diff(tt.want, g.snapshot().sendSizes); diff != "" {
				t.Errorf("request sizes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientConcurrentSignIn checks that calls refused together with one
// stale token sign in once between them, rather than revoking each other's
// new sessions.
func TestClientConcurrentSignIn(t *testing.T) {
	g, c := mustGateway(t)
	if err := c.SignIn(t.Context()); err != nil {
		t.Fatal(err)
	}
	g.dropSessions()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.Devices(t.Context())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Devices() #%d error: %v", i, err)
		}
	}
	if g.snapshot().signIns != 2 {
		t.Errorf("sign-ins = %d, want 2", g.snapshot().signIns)
	}
}

func TestClientRaw(t *testing.T) {
	g, c := mustGateway(t)
	resp, err := c.Raw(t.Context(), http.MethodPost, "/v1/send", []byte(`{"v":1,"registrationIds":[]}`))
	if err != nil {
		t.Fatalf("Raw() error: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 400, not 401: Raw signed in and sent the bearer.
	if resp.StatusCode != http.StatusBadRequest || string(b) != `{"error":"invalid_request"}` {
		t.Errorf("Raw(bad send) = %d %s, want 400 invalid_request", resp.StatusCode, b)
	}
	if g.snapshot().signIns != 1 {
		t.Errorf("sign-ins = %d, want 1", g.snapshot().signIns)
	}
}
