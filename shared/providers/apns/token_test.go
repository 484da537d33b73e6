package apns_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

// TestTokenReuse: one token until contract.APNSTokenLifetime has passed by
// the injected clock, then a new one (reference-behaviour §7.1).
func TestTokenReuse(t *testing.T) {
	clk, st, c := setup(t)
	m := pushtest.Cases()[0].Message()
	m.Deadline = clk.Now().Add(2 * time.Hour).UnixMilli()
	send := func() string {
		t.Helper()
		st.ClearInbox()
		if o := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token}, m); o.Kind != push.Sent {
			t.Fatalf("Send = %+v, want sent", o)
		}
		return st.Inbox()[0].Headers["authorization"]
	}
	first := send()
	if second := send(); second != first {
		t.Errorf("second send re-signed the token")
	}
	clk.Advance(contract.APNSTokenLifetime - time.Millisecond)
	if got := send(); got != first {
		t.Errorf("at lifetime − 1 ms the token changed")
	}
	clk.Advance(time.Millisecond)
	renewed := send()
	if renewed == first {
		t.Errorf("at lifetime the token was not re-signed")
	}
	if got := send(); got != renewed {
		t.Errorf("the renewed token was not reused")
	}
}

// TestForeignKeyRejected: the stand-in refuses a token signed by another
// key, and a 403 is terminal.
func TestForeignKeyRejected(t *testing.T) {
	clk := newClock()
	st := mustStandin(t, clk, mustKey(t))
	c := mustClient(t, clk, st, mustKey(t))
	got := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: token}, pushtest.Cases()[0].Message())
	if want := (push.Outcome{Kind: push.Terminal, Reason: "InvalidProviderToken"}); got != want {
		t.Errorf("Send = %+v, want %+v", got, want)
	}
	if in := st.Inbox(); len(in) != 1 || in[0].Status != 403 {
		t.Errorf("inbox = %+v, want one 403", in)
	}
}

// TestStandinChecks: the stand-in refuses what APNs would.
func TestStandinChecks(t *testing.T) {
	clk := newClock()
	key := mustKey(t)
	st := mustStandin(t, clk, key)
	m := pushtest.Cases()[0].Message()
	tests := []struct {
		name   string
		opts   apns.Options
		token  string
		reason string
	}{
		{"wrong topic", apns.Options{Topic: "com.example.other"}, token, "BadTopic"},
		{"wrong key id", apns.Options{KeyID: "OTHER12345"}, token, "InvalidProviderToken"},
		{"wrong team", apns.Options{TeamID: "OTHER12345"}, token, "InvalidProviderToken"},
		{"token not hex", apns.Options{}, "zz", "BadDeviceToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Key, o.Clock, o.RootCAs, o.ProductionURL = key, clk, st.RootCAs(), st.APNSURL("production")
			o.KeyID, o.TeamID = or(o.KeyID, keyID), or(o.TeamID, teamID)
			c, err := apns.New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := c.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: tt.token}, m)
			if got.Reason != tt.reason || got.Kind == push.Sent {
				t.Errorf("Send = %+v, want reason %q", got, tt.reason)
			}
		})
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestExpiredProviderTokenResigned: APNs' 403 ExpiredProviderToken is
// answered by signing a new token and sending once more, so the
// notification goes out in the same delivery; the new token is then reused.
// Sends refused concurrently with one token re-sign it once.
func TestExpiredProviderTokenResigned(t *testing.T) {
	clk, st, c := setup(t)
	m := pushtest.Cases()[0].Message()
	m.Deadline = clk.Now().Add(time.Hour).UnixMilli()
	target := push.Target{Platform: contract.PlatformIOS, Token: token}
	if err := st.AddFault(standin.Fault{Provider: standin.APNS, Token: token, Status: 403,
		Reason: "ExpiredProviderToken", Times: 1}); err != nil {
		t.Fatal(err)
	}
	if o := c.Send(context.Background(), target, m); o.Kind != push.Sent {
		t.Fatalf("Send after ExpiredProviderToken = %+v, want sent on the second request", o)
	}
	in := st.Inbox()
	if len(in) != 2 || in[0].Status != 403 || in[1].Status != 200 ||
		in[0].Headers["authorization"] == in[1].Headers["authorization"] {
		t.Fatalf("inbox = %d requests, want a 403 then a 200 with a new token", len(in))
	}
	renewed := in[1].Headers["authorization"]
	st.ClearInbox()
	// Twice refused: the second answer stands, and no third request.
	if err := st.AddFault(standin.Fault{Provider: standin.APNS, Token: token, Status: 403,
		Reason: "ExpiredProviderToken", Times: 2}); err != nil {
		t.Fatal(err)
	}
	if o := c.Send(context.Background(), target, m); o.Kind != push.Terminal || o.Reason != "ExpiredProviderToken" {
		t.Fatalf("Send refused twice = %+v, want terminal ExpiredProviderToken", o)
	}
	if in := st.Inbox(); len(in) != 2 || in[0].Headers["authorization"] != renewed {
		t.Fatalf("inbox = %d requests, want 2, the first with the token signed before", len(in))
	}
	// Many sends refused with one token sign one new token between them.
	st.ClearInbox()
	if err := st.AddFault(standin.Fault{Provider: standin.APNS, Token: "*", Status: 403,
		Reason: "ExpiredProviderToken", Times: 8}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { c.Send(context.Background(), target, m) })
	}
	wg.Wait()
	tokens := map[string]bool{}
	for _, d := range st.Inbox() {
		tokens[d.Headers["authorization"]] = true
	}
	// Each refused token is re-signed once: the first one, and at most a
	// couple more when a send that started after a re-sign is refused too.
	// Re-signing per refusal makes nine.
	if len(tokens) > 4 {
		t.Errorf("8 concurrent refusals made %d distinct tokens, want each refused token re-signed once", len(tokens))
	}
}
