package apns_test

import (
	"context"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
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
