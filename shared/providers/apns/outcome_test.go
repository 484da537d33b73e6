package apns_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

// TestSendOutcomes maps every kind of APNs answer through the real client
// and the stand-in (reference-behaviour §6, §7.1).
func TestSendOutcomes(t *testing.T) {
	clk, st, c := setup(t)
	// An HTTP date 90 s after the manual clock.
	date := clk.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name  string
		fault *standin.Fault
		want  push.Outcome
	}{
		{"accepted", nil, push.Outcome{Kind: push.Sent}},
		{"410", &standin.Fault{Status: 410, Reason: "Unregistered"}, push.Outcome{Kind: push.Dead, Reason: "Unregistered"}},
		{"410 with any reason", &standin.Fault{Status: 410, Reason: "ExpiredToken"}, push.Outcome{Kind: push.Dead, Reason: "ExpiredToken"}},
		{"400 BadDeviceToken", &standin.Fault{Status: 400, Reason: "BadDeviceToken"}, push.Outcome{Kind: push.Dead, Reason: "BadDeviceToken"}},
		{"400 Unregistered", &standin.Fault{Status: 400, Reason: "Unregistered"}, push.Outcome{Kind: push.Dead, Reason: "Unregistered"}},
		{"400 DeviceTokenNotForTopic", &standin.Fault{Status: 400, Reason: "DeviceTokenNotForTopic"}, push.Outcome{Kind: push.Dead, Reason: "DeviceTokenNotForTopic"}},
		{"400 other reason", &standin.Fault{Status: 400, Reason: "BadCollapseId"}, push.Outcome{Kind: push.Terminal, Reason: "BadCollapseId"}},
		{"403", &standin.Fault{Status: 403, Reason: "Forbidden"}, push.Outcome{Kind: push.Terminal, Reason: "Forbidden"}},
		{"413", &standin.Fault{Status: 413, Reason: "PayloadTooLarge"}, push.Outcome{Kind: push.Terminal, Reason: "PayloadTooLarge"}},
		{"429 with seconds", &standin.Fault{Status: 429, Reason: "TooManyRequests", RetryAfter: "120"},
			push.Outcome{Kind: push.Retry, Reason: "TooManyRequests", RetryAfter: 120 * time.Second}},
		{"429 with an HTTP date", &standin.Fault{Status: 429, Reason: "TooManyRequests", RetryAfter: date},
			push.Outcome{Kind: push.Retry, Reason: "TooManyRequests", RetryAfter: 90 * time.Second}},
		{"429 without Retry-After", &standin.Fault{Status: 429, Reason: "TooManyRequests"},
			push.Outcome{Kind: push.Retry, Reason: "TooManyRequests"}},
		{"500", &standin.Fault{Status: 500, Reason: "InternalServerError"}, push.Outcome{Kind: push.Retry, Reason: "InternalServerError"}},
		{"503", &standin.Fault{Status: 503, Reason: "ServiceUnavailable", RetryAfter: "7"},
			push.Outcome{Kind: push.Retry, Reason: "ServiceUnavailable", RetryAfter: 7 * time.Second}},
		{"503 without reason", &standin.Fault{Status: 503}, push.Outcome{Kind: push.Retry, Reason: "unknown"}},
		{"reset", &standin.Fault{Reset: true}, push.Outcome{Kind: push.Retry, Reason: "transport"}},
	}
	m := pushtest.Cases()[0].Message()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st.ClearFaults()
			st.ClearInbox()
			if tt.fault != nil {
				f := *tt.fault
				f.Provider, f.Token = standin.APNS, token
				if err := st.AddFault(f); err != nil {
					t.Fatal(err)
				}
			}
			got := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token}, m)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Send mismatch (-want +got):\n%s", diff)
			}
			if n := len(st.Inbox()); n != 1 {
				t.Errorf("stand-in saw %d requests, want 1", n)
			}
		})
	}
}

// TestSendTimeout: a provider that never answers is a retry with
// apns_timeout once the request's deadline passes.
func TestSendTimeout(t *testing.T) {
	_, st, c := setup(t)
	if err := st.AddFault(standin.Fault{Provider: standin.APNS, Token: "*", Hang: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got := c.Send(ctx, push.Target{Platform: contract.PlatformIOS, Token: token}, pushtest.Cases()[0].Message())
	if want := (push.Outcome{Kind: push.Retry, Reason: apns.ReasonTimeout}); got != want {
		t.Errorf("Send = %+v, want %+v", got, want)
	}
	// The connection survives the abandoned stream.
	if got := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token}, pushtest.Cases()[0].Message()); got.Kind != push.Sent {
		t.Errorf("Send after timeout = %+v, want sent", got)
	}
}

// TestSendExpired: no request once the deadline has passed.
func TestSendExpired(t *testing.T) {
	clk, st, c := setup(t)
	m := pushtest.Cases()[0].Message()
	clk.Set(time.UnixMilli(m.Deadline))
	got := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token}, m)
	if want := (push.Outcome{Kind: push.Terminal, Reason: push.ReasonExpired}); got != want {
		t.Errorf("Send at the deadline = %+v, want %+v", got, want)
	}
	if n := len(st.Inbox()); n != 0 {
		t.Errorf("stand-in saw %d requests, want 0", n)
	}
}

// TestNotConfigured: no key, no request, a terminal outcome.
func TestNotConfigured(t *testing.T) {
	clk := newClock()
	st := mustStandin(t, clk, mustKey(t))
	c, err := apns.New(apns.Options{Clock: clk, ProductionURL: st.APNSURL("production"), RootCAs: st.RootCAs()})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token}, pushtest.Cases()[0].Message())
	if want := (push.Outcome{Kind: push.Terminal, Reason: apns.ReasonNotConfigured}); got != want {
		t.Errorf("Send = %+v, want %+v", got, want)
	}
	if n := len(st.Inbox()); n != 0 {
		t.Errorf("stand-in saw %d requests, want 0", n)
	}
}

// TestEnvironments: each environment goes to its own host; a missing one is
// production.
func TestEnvironments(t *testing.T) {
	_, st, c := setup(t)
	m := pushtest.Cases()[0].Message()
	for _, env := range []contract.APNSEnvironment{contract.APNSSandbox, contract.APNSProduction, ""} {
		c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token, APNSEnvironment: env}, m)
	}
	var hosts []string
	for _, d := range st.Inbox() {
		hosts = append(hosts, d.Host)
	}
	want := []string{standin.HostAPNSSandbox, standin.HostAPNSProduction, standin.HostAPNSProduction}
	if diff := cmp.Diff(want, hosts); diff != "" {
		t.Errorf("hosts mismatch (-want +got):\n%s", diff)
	}
}

func TestNewErrors(t *testing.T) {
	key := mustKey(t)
	tests := []struct {
		name string
		opts apns.Options
	}{
		{"no clock", apns.Options{Key: key, KeyID: keyID, TeamID: teamID}},
		{"no key id", apns.Options{Key: key, TeamID: teamID, Clock: clock.Real{}}},
		{"not PEM", apns.Options{Key: []byte("nope"), KeyID: keyID, TeamID: teamID, Clock: clock.Real{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := apns.New(tt.opts); err == nil {
				t.Errorf("New(%s) succeeded, want an error", tt.name)
			}
		})
	}
}

// TestUnparseableBody: an answer apns2 cannot decode is still classified by
// its status, with the reason "unparseable". The client runs over a
// caller-supplied HTTP client here.
func TestUnparseableBody(t *testing.T) {
	tests := []struct {
		status int
		want   push.Outcome
	}{
		{503, push.Outcome{Kind: push.Retry, Reason: push.ReasonUnparseable, RetryAfter: 3 * time.Second}},
		{410, push.Outcome{Kind: push.Dead, Reason: push.ReasonUnparseable}},
		{403, push.Outcome{Kind: push.Terminal, Reason: push.ReasonUnparseable}},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(tt.status)
				w.Write([]byte("<html>busy</html>"))
			}))
			srv.EnableHTTP2 = true
			srv.StartTLS()
			defer srv.Close()
			c, err := apns.New(apns.Options{Key: mustKey(t), KeyID: keyID, TeamID: teamID, Clock: newClock(),
				ProductionURL: srv.URL, HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			got := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token}, pushtest.Cases()[0].Message())
			if got != tt.want {
				t.Errorf("Send = %+v, want %+v", got, tt.want)
			}
		})
	}
}
