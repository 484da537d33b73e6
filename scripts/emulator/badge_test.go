package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/store/storetest"
)

// badgeOf returns the badge a delivery carries, as its provider got it:
// APNs aps.badge; FCM data.badge, which must agree with
// android.notification.notification_count when the message has that form
// (the notification form's alerts). 0 when it carries none, and then no
// "badge" or "notification_count" key is anywhere in the body.
func badgeOf(t *testing.T, d standin.Delivery) int64 {
	t.Helper()
	if d.Provider == standin.APNS {
		var b struct {
			APS struct {
				Badge *int64 `json:"badge"`
			} `json:"aps"`
		}
		if err := json.Unmarshal(d.Body, &b); err != nil {
			t.Fatal(err)
		}
		if b.APS.Badge == nil {
			if bytes.Contains(d.Body, []byte(`"badge"`)) {
				t.Errorf("APNs body holds a badge key outside aps: %s", d.Body)
			}
			return 0
		}
		return *b.APS.Badge
	}
	var b struct {
		Message struct {
			Data    map[string]string `json:"data"`
			Android struct {
				Notification *struct {
					Count *int64 `json:"notification_count"`
				} `json:"notification"`
			} `json:"android"`
		} `json:"message"`
	}
	if err := json.Unmarshal(d.Body, &b); err != nil {
		t.Fatal(err)
	}
	s, ok := b.Message.Data["badge"]
	n := b.Message.Android.Notification
	if !ok {
		if bytes.Contains(d.Body, []byte(`"badge"`)) || bytes.Contains(d.Body, []byte(`"notification_count"`)) {
			t.Errorf("FCM body holds a badge without data.badge: %s", d.Body)
		}
		return 0
	}
	var v int64
	if _, err := fmt.Sscan(s, &v); err != nil || fmt.Sprint(v) != s {
		t.Errorf("data.badge = %q, want a decimal string", s)
	}
	if n != nil && (n.Count == nil || *n.Count != v) {
		t.Errorf("android.notification.notification_count = %v, want %d (data.badge)", n.Count, v)
	}
	if n == nil && bytes.Contains(d.Body, []byte(`"notification_count"`)) {
		t.Errorf("a data-only message holds notification_count: %s", d.Body)
	}
	return v
}

// badges returns the badge of each delivery to token, in arrival order.
func (e *emu) badges(token string) []int64 {
	e.t.Helper()
	var out []int64
	for _, d := range e.inbox() {
		if strings.Contains(d.Path, token) || strings.Contains(string(d.Body), `"token":"`+token+`"`) {
			out = append(out, badgeOf(e.t, d))
		}
	}
	return out
}

// TestBadges: a registration's badge, through the routes, the store and
// delivery to the stand-ins by the real apns2 and firebase clients, on both
// databases and in both FCM forms. Unset, no push carries one. Once set,
// each alert push raises it by the notifications it carries (1, or a
// summary's members) and carries the total; a retry carries its first
// attempt's number and raises nothing; a dismissal carries none and changes
// nothing; the phone's own count overwrites it; a new token sets it back to
// 0, the same token keeps it.
func TestBadges(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		for _, form := range []string{"notification", "data"} {
			t.Run(d.Name+"/"+form, func(t *testing.T) {
				e := startEmu(t, d, "ORCA_PUSH_FCM_MESSAGE="+form)
				ctx := context.Background()
				ios, pixel, plain := e.registerIOS("iphone"), e.registerAndroid("pixel"), e.registerAndroid("plain")
				pixelToken, plainToken := "fcm-token-pixel"+strings.Repeat("x", 32), "fcm-token-plain"+strings.Repeat("x", 32)
				for _, reg := range []string{ios, pixel} {
					if got, err := e.host.Badge(ctx, reg, 5); err != nil || got != 5 {
						t.Fatalf("Badge(%s, 5) = %d, %v", reg, got, err)
					}
				}
				all := []string{ios, pixel, plain}
				seq := int64(0)
				send := func(n contract.Notification, regs ...string) {
					t.Helper()
					if res, err := e.host.Send(ctx, regs, n); err != nil || len(res) != len(regs) {
						t.Fatalf("Send = %v, %v", res, err)
					}
				}
				next := func() contract.Notification {
					seq++
					return alert(fmt.Sprint("n", seq), seq)
				}
				want := func(step string, token string, badges ...int64) {
					t.Helper()
					if got := e.badges(token); fmt.Sprint(got) != fmt.Sprint(badges) {
						t.Errorf("%s: badges to %.12s… = %v, want %v", step, token, got, badges)
					}
				}
				clear := func() { e.call("DELETE", "/_emulator/inbox", "", nil) }

				// One alert: +1.
				send(next(), all...)
				e.advance(contract.DefaultCoalesce.Milliseconds())
				want("alert", iosToken, 6)
				want("alert", pixelToken, 6)
				want("alert", plainToken, 0)

				// A summary of three: +3, once.
				clear()
				for range 3 {
					send(next(), all...)
					e.advance(100)
				}
				e.advance(contract.DefaultCoalesce.Milliseconds())
				want("summary", iosToken, 9)
				want("summary", pixelToken, 9)
				want("summary", plainToken, 0)

				// A dismissal carries none and changes nothing.
				clear()
				dismiss := alert(fmt.Sprint("n", seq), seq)
				dismiss.Kind = contract.KindDismiss
				send(dismiss, all...)
				e.advance(0)
				want("dismissal", iosToken, 0)
				want("dismissal", pixelToken, 0)

				// A retry carries its first attempt's number.
				clear()
				e.fault(`{"provider":"apns","token":"*","status":500,"reason":"InternalServerError","times":1}`)
				e.fault(`{"provider":"fcm","token":"*","status":503,"reason":"UNAVAILABLE","times":1}`)
				send(next(), ios, pixel)
				for range 15 {
					e.advance(1000)
				}
				want("retried", iosToken, 10, 10)
				want("retried", pixelToken, 10, 10)

				// The phone's count overwrites the gateway's.
				clear()
				if _, err := e.host.Badge(ctx, ios, 0); err != nil {
					t.Fatal(err)
				}
				send(next(), ios)
				e.advance(contract.DefaultCoalesce.Milliseconds())
				want("after the phone's 0", iosToken, 1)

				// The same token keeps the count; a new one sets it to 0.
				clear()
				if _, err := e.host.Register(ctx, hostclient.RegisterParams{DeviceID: "pixel",
					Platform: contract.PlatformAndroid, Token: pixelToken}); err != nil {
					t.Fatal(err)
				}
				send(next(), pixel)
				e.advance(contract.DefaultCoalesce.Milliseconds())
				want("same token", pixelToken, 11)
				clear()
				newToken := "fcm-token-new" + strings.Repeat("y", 32)
				if _, err := e.host.Register(ctx, hostclient.RegisterParams{DeviceID: "pixel",
					Platform: contract.PlatformAndroid, Token: newToken}); err != nil {
					t.Fatal(err)
				}
				send(next(), pixel)
				e.advance(contract.DefaultCoalesce.Milliseconds())
				want("new token", newToken, 1)
			})
		}
	}
}
