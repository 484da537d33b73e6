package hostclient_test

import (
	"net/http"
	"testing"

	"onorca.dev/push/shared/hostclient"
)

// A session kept from an earlier run is used without signing in; once the
// gateway has forgotten it, the client signs in once and carries on.
func TestSetSession(t *testing.T) {
	g, c := mustGateway(t)
	if err := c.SignIn(t.Context()); err != nil {
		t.Fatal(err)
	}
	token, expiresAt := c.Session()
	later, err := hostclient.New(hostclient.Options{BaseURL: g.url, Keypair: mustKeypairFrom(t, 0x07),
		HTTPClient: http.DefaultClient, Clock: g.clock})
	if err != nil {
		t.Fatal(err)
	}
	later.SetSession(token, expiresAt)
	if _, err := later.Devices(t.Context()); err != nil {
		t.Fatalf("Devices() with a kept session: %v", err)
	}
	if n := g.snapshot().signIns; n != 1 {
		t.Fatalf("%d sign-ins, want only the first run's", n)
	}
	g.dropSessions()
	if _, err := later.Devices(t.Context()); err != nil {
		t.Fatalf("Devices() after the gateway forgot the session: %v", err)
	}
	if n := g.snapshot().signIns; n != 2 {
		t.Fatalf("%d sign-ins, want 2", n)
	}
	if got, _ := later.Session(); got == token {
		t.Fatal("the stale session was kept")
	}
}
