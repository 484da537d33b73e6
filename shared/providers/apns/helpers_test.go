package apns_test

import (
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push/pushtest"
)

const (
	keyID  = "KEY1234567"
	teamID = "TEAM123456"
	// token is a well-formed device token.
	token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// mustKey returns a fresh .p8 PEM.
func mustKey(t testing.TB) []byte {
	t.Helper()
	k, err := standin.GenerateAPNSKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// mustStandin starts a stand-in checking tokens signed by key.
func mustStandin(t testing.TB, clk clock.Clock, key []byte) *standin.Server {
	t.Helper()
	st, err := standin.Start(standin.Options{Clock: clk, APNSKey: key, APNSKeyID: keyID, APNSTeamID: teamID, InboxLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// mustClient returns a client signing with key and talking to st.
func mustClient(t testing.TB, clk clock.Clock, st *standin.Server, key []byte) *apns.Client {
	t.Helper()
	c, err := apns.New(apns.Options{
		Key: key, KeyID: keyID, TeamID: teamID, Clock: clk,
		SandboxURL: st.APNSURL("sandbox"), ProductionURL: st.APNSURL("production"),
		RootCAs: st.RootCAs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newClock returns a manual clock at pushtest.Now.
func newClock() *clock.Manual { return clock.NewManual(time.UnixMilli(pushtest.Now)) }

// setup returns a manual clock, a stand-in and a client wired together.
func setup(t testing.TB) (*clock.Manual, *standin.Server, *apns.Client) {
	t.Helper()
	clk := newClock()
	key := mustKey(t)
	st := mustStandin(t, clk, key)
	return clk, st, mustClient(t, clk, st, key)
}
