package routes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/store/storetest"
)

func mustSignIn(t *testing.T, h *hostclient.Client) string {
	t.Helper()
	if err := h.SignIn(context.Background()); err != nil {
		t.Fatal(err)
	}
	token, _ := h.Session()
	return token
}

func android(device string) hostclient.RegisterParams {
	return hostclient.RegisterParams{DeviceID: device, Platform: contract.PlatformAndroid, Token: strings.Repeat("f", 40) + device}
}

func TestRegisterValidation(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			token := mustSignIn(t, g.mustHost(t))
			// An existing registration that a refused request must not touch.
			if status, body := g.do(t, "POST", "/v1/devices", contracttest.Registrations()[0].Body, bearerHeader(token)); status != 200 {
				t.Fatalf("register = %d %s", status, body)
			}
			for _, tt := range contracttest.Registrations() {
				if tt.OK {
					continue
				}
				t.Run(tt.Name, func(t *testing.T) {
					before := g.rowCounts(t)
					status, body := g.do(t, "POST", "/v1/devices", tt.Body, bearerHeader(token))
					if status != 400 || body != `{"error":"invalid_request"}` {
						t.Fatalf("POST /v1/devices = %d %s, want 400 invalid_request", status, body)
					}
					g.mustUnchanged(t, before)
				})
			}
		})
	}
}

func TestRegisterListDelete(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			g := mustGateway(t, d)
			a, b := g.mustHost(t), g.mustHost(t)
			id1, err := a.Register(ctx, android("phone-1"))
			if err != nil {
				t.Fatal(err)
			}
			// A new token for the same device keeps the id; ids differ per device.
			p := android("phone-1")
			p.Token = strings.Repeat("e", 64)
			if again, err := a.Register(ctx, p); err != nil || again != id1 {
				t.Fatalf("re-register = %q, %v; want %q", again, err, id1)
			}
			id2, _ := a.Register(ctx, hostclient.RegisterParams{DeviceID: "phone-2", Platform: contract.PlatformIOS,
				Token: strings.Repeat("ab", 32), APNSEnvironment: contract.APNSSandbox})
			list, err := a.Devices(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := []contract.Device{
				{RegistrationID: id1, DeviceID: "phone-1", Platform: contract.PlatformAndroid},
				{RegistrationID: id2, DeviceID: "phone-2", Platform: contract.PlatformIOS},
			}
			if fmt.Sprint(list) != fmt.Sprint(want) {
				t.Fatalf("Devices = %v, want %v", list, want)
			}
			// Another host sees nothing and cannot delete.
			if other, err := b.Devices(ctx); err != nil || len(other) != 0 {
				t.Fatalf("other host's Devices = %v, %v", other, err)
			}
			if err := b.Delete(ctx, id1); !errors.Is(err, contract.ErrNotFound) {
				t.Fatalf("other host's Delete = %v, want not_found", err)
			}
			// The owner deletes: 204 with an empty body, then 404.
			token, _ := a.Session()
			if status, body := g.do(t, "DELETE", "/v1/devices/"+id1, "", bearerHeader(token)); status != 204 || body != "" {
				t.Fatalf("DELETE = %d %q, want 204 and no body", status, body)
			}
			if status, body := g.do(t, "DELETE", "/v1/devices/"+id1, "", bearerHeader(token)); status != 404 || body != `{"error":"not_found"}` {
				t.Fatalf("second DELETE = %d %s", status, body)
			}
		})
	}
}

func TestDeviceCap(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			g := mustGateway(t, d)
			h := g.mustHost(t)
			var first string
			for i := range contract.MaxDevicesPerHost {
				id, err := h.Register(ctx, android(fmt.Sprintf("d%02d", i)))
				if err != nil {
					t.Fatalf("device %d: %v", i, err)
				}
				if i == 0 {
					first = id
				}
			}
			before := g.rowCounts(t)
			if _, err := h.Register(ctx, android("d64")); !errors.Is(err, contract.ErrTooManyDevices) {
				t.Fatalf("65th device = %v, want too_many_devices", err)
			}
			g.mustUnchanged(t, before)
			if _, err := h.Register(ctx, android("d00")); err != nil {
				t.Fatalf("re-registering at the cap = %v", err)
			}
			if err := h.Delete(ctx, first); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Register(ctx, android("d64")); err != nil {
				t.Fatalf("a deleted registration frees its slot: %v", err)
			}
			// Another host has its own cap.
			if _, err := g.mustHost(t).Register(ctx, android("d64")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDeadClearedByReregistration(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			g := mustGateway(t, d)
			h := g.mustHost(t)
			id, _ := h.Register(ctx, android("p"))
			dev, err := g.svc.Store.Device(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			// A token rotated since the read is not retired.
			stale := dev
			stale.Token = "other"
			if changed, err := g.svc.Store.MarkDeviceDead(ctx, stale, 1); err != nil || changed {
				t.Fatalf("MarkDeviceDead(stale token) = %v, %v; want false", changed, err)
			}
			if changed, err := g.svc.Store.MarkDeviceDead(ctx, dev, 1); err != nil || !changed {
				t.Fatalf("MarkDeviceDead = %v, %v; want true", changed, err)
			}
			if list, _ := h.Devices(ctx); len(list) != 1 || !list[0].Dead {
				t.Fatalf("Devices = %v, want one dead", list)
			}
			if _, err := h.Register(ctx, android("p")); err != nil {
				t.Fatal(err)
			}
			if list, _ := h.Devices(ctx); len(list) != 1 || list[0].Dead {
				t.Fatalf("Devices = %v, want alive again", list)
			}
		})
	}
}
