package routes_test

import (
	"context"
	"errors"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
	"onorca.dev/push/shared/store/storetest"
)

// badgeState is a registration's badge as stored: "unset" or its count.
func (g *gateway) badgeState(t *testing.T, reg string) any {
	t.Helper()
	d, err := g.svc.Store.Device(context.Background(), reg)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Badged {
		return "unset"
	}
	return d.Badge
}

// TestBadgeRoute: PUT /v1/devices/{registrationId}/badge sets the owner's
// registration's count (200 {"count":N}); another host's registration and
// an unknown one are 404 not_found; every body the contract refuses is 400
// invalid_request; a refusal changes no row and no count, and a registration
// never set stays unset.
func TestBadgeRoute(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			g := mustGateway(t, d)
			a, b := g.mustHost(t), g.mustHost(t)
			reg, err := a.Register(ctx, android("phone"))
			if err != nil {
				t.Fatal(err)
			}
			untouched, err := a.Register(ctx, android("other"))
			if err != nil {
				t.Fatal(err)
			}
			if got := g.badgeState(t, reg); got != "unset" {
				t.Fatalf("a new registration's badge = %v, want unset", got)
			}
			if n, err := a.Badge(ctx, reg, 3); err != nil || n != 3 {
				t.Fatalf("Badge = %d, %v; want 3", n, err)
			}
			if got := g.badgeState(t, reg); got != int64(3) {
				t.Fatalf("badge = %v, want 3", got)
			}
			token := mustSignIn(t, a)
			path := "/v1/devices/" + reg + "/badge"
			for _, tt := range contracttest.Badges() {
				t.Run(tt.Name, func(t *testing.T) {
					before := g.rowCounts(t)
					status, body := g.do(t, "PUT", path, tt.Body, bearerHeader(token))
					if tt.OK {
						if status != 200 {
							t.Fatalf("PUT %s = %d %s, want 200", path, status, body)
						}
						if _, err := a.Badge(ctx, reg, 3); err != nil {
							t.Fatal(err)
						}
						return
					}
					if status != 400 || body != `{"error":"invalid_request"}` {
						t.Fatalf("PUT %s = %d %s, want 400 invalid_request", path, status, body)
					}
					g.mustUnchanged(t, before)
					if got := g.badgeState(t, reg); got != int64(3) {
						t.Fatalf("badge after a refusal = %v, want 3", got)
					}
				})
			}
			if status, body := g.do(t, "PUT", path, `{"v":1,"count":99999}`, bearerHeader(token)); status != 200 || body != `{"count":99999}` {
				t.Errorf("PUT count 99999 = %d %s", status, body)
			}
			mustSignIn(t, b)
			before := g.rowCounts(t)
			if _, err := b.Badge(ctx, reg, 7); !errors.Is(err, contract.ErrNotFound) {
				t.Errorf("another host's Badge = %v, want not_found", err)
			}
			if _, err := a.Badge(ctx, "no-such-registration", 7); !errors.Is(err, contract.ErrNotFound) {
				t.Errorf("an unknown registration's Badge = %v, want not_found", err)
			}
			if status, body := g.do(t, "PUT", "/v1/devices/"+reg+"/badge", `{"v":1,"count":1}`, nil); status != 401 {
				t.Errorf("PUT without a bearer = %d %s, want 401", status, body)
			}
			g.mustUnchanged(t, before)
			if got := g.badgeState(t, reg); got != int64(99999) {
				t.Errorf("badge after another host's and unknown ids = %v, want 99999", got)
			}
			if got := g.badgeState(t, untouched); got != "unset" {
				t.Errorf("the registration never set has badge %v, want unset", got)
			}
		})
	}
}
