package fcm_test

import (
	"context"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push/pushtest"
)

// token is a well-formed FCM registration token.
const token = "fcm-token_0123456789:abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJ"

// mustStandin starts a stand-in.
func mustStandin(t testing.TB, clk clock.Clock) *standin.Server {
	t.Helper()
	key, err := standin.GenerateAPNSKey()
	if err != nil {
		t.Fatal(err)
	}
	st, err := standin.Start(standin.Options{Clock: clk, APNSKey: key, InboxLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// mustClient returns a client talking to st.
func mustClient(t testing.TB, clk clock.Clock, st *standin.Server) *fcm.Client {
	t.Helper()
	c, err := fcm.New(context.Background(), fcm.Options{Endpoint: st.FCMEndpoint(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// mustDataClient returns a client with DataOnly talking to st.
func mustDataClient(t testing.TB, clk clock.Clock, st *standin.Server) *fcm.Client {
	t.Helper()
	c, err := fcm.New(context.Background(), fcm.Options{Endpoint: st.FCMEndpoint(), Clock: clk, DataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newClockB returns a manual clock at pushtest.Now.
func newClockB() *clock.Manual { return clock.NewManual(time.UnixMilli(pushtest.Now)) }

// setup returns a manual clock at pushtest.Now, a stand-in and a client.
func setup(t testing.TB) (*clock.Manual, *standin.Server, *fcm.Client) {
	t.Helper()
	clk := newClockB()
	st := mustStandin(t, clk)
	return clk, st, mustClient(t, clk, st)
}
