package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/store/storetest"
)

// priorities returns each delivery's priority as its provider got it, in
// arrival order: "apns:<apns-priority>/<apns-push-type>" or
// "fcm:<android.priority>".
func priorities(t *testing.T, in []standin.Delivery) []string {
	t.Helper()
	out := make([]string, 0, len(in))
	for _, d := range in {
		if d.Provider == standin.APNS {
			out = append(out, "apns:"+d.Headers["apns-priority"]+"/"+d.Headers["apns-push-type"])
			continue
		}
		var b struct {
			Message struct {
				Android map[string]json.RawMessage `json:"android"`
			} `json:"message"`
		}
		if err := json.Unmarshal(d.Body, &b); err != nil {
			t.Fatal(err)
		}
		var p string
		_ = json.Unmarshal(b.Message.Android["priority"], &p)
		out = append(out, "fcm:"+p)
	}
	return out
}

// TestUrgency: a notification's urgency is stored with the pending alert
// and read back by delivery, through the real apns2 and firebase clients to
// the stand-ins, on both databases and in both FCM forms: normal goes with
// APNs priority 5 and FCM priority normal, high and absent as today (10,
// high); a summary takes its most urgent member's; a dismissal keeps its
// own priority (APNs 5 background, FCM high) whatever urgency it carries.
func TestUrgency(t *testing.T) {
	withUrgency := func(n contract.Notification, u contract.Urgency) contract.Notification {
		n.Urgency = u
		return n
	}
	dismissal := func(id string, seq int64, u contract.Urgency) contract.Notification {
		n := withUrgency(alert(id, seq), u)
		n.Kind = contract.KindDismiss
		return n
	}
	cases := []struct {
		name    string
		members []contract.Notification // sent 100 ms apart, one batch
		want    string                  // every phone's priority, provider aside
	}{
		{"absent", []contract.Notification{alert("a", 1)}, "high"},
		{"high", []contract.Notification{withUrgency(alert("a", 1), contract.UrgencyHigh)}, "high"},
		{"normal", []contract.Notification{withUrgency(alert("a", 1), contract.UrgencyNormal)}, "normal"},
		{"summary of normals", []contract.Notification{
			withUrgency(alert("a", 1), contract.UrgencyNormal), withUrgency(alert("b", 2), contract.UrgencyNormal)}, "normal"},
		{"summary of normal and absent", []contract.Notification{
			withUrgency(alert("a", 1), contract.UrgencyNormal), alert("b", 2)}, "high"},
		{"summary of high and normal", []contract.Notification{
			withUrgency(alert("a", 1), contract.UrgencyHigh), withUrgency(alert("b", 2), contract.UrgencyNormal)}, "high"},
		{"normal dismissal", []contract.Notification{dismissal("a", 1, contract.UrgencyNormal)}, "dismissal"},
		{"high dismissal", []contract.Notification{dismissal("a", 1, contract.UrgencyHigh)}, "dismissal"},
	}
	want := map[string][2]string{
		"high":      {"apns:10/alert", "fcm:high"},
		"normal":    {"apns:5/alert", "fcm:normal"},
		"dismissal": {"apns:5/background", "fcm:high"},
	}
	for _, d := range storetest.Dialects(t) {
		for _, form := range []string{"notification", "data"} {
			t.Run(d.Name+"/"+form, func(t *testing.T) {
				e := startEmu(t, d, "ORCA_PUSH_FCM_MESSAGE="+form)
				ios, android := e.registerIOS("iphone"), e.registerAndroid("pixel")
				for i, c := range cases {
					e.call("DELETE", "/_emulator/inbox", "", nil)
					for _, n := range c.members {
						n.NotificationID, n.Seq = fmt.Sprintf("%s-%d", n.NotificationID, i), n.Seq+int64(10*i) // each case its own events
						if res, err := e.host.Send(context.Background(), []string{ios, android}, n); err != nil || len(res) != 2 ||
							res[0].Status != contract.StatusQueued || res[1].Status != contract.StatusQueued {
							t.Fatalf("%s: Send = %v, %v", c.name, res, err)
						}
						e.advance(100)
					}
					e.advance(contract.DefaultCoalesce.Milliseconds())
					in := e.inbox()
					got := priorities(t, in)
					w := want[c.want]
					if len(got) != 2 || !(got[0] == w[0] && got[1] == w[1] || got[0] == w[1] && got[1] == w[0]) {
						t.Errorf("%s: priorities %v, want %v", c.name, got, w)
					}
					for _, dl := range in {
						if dl.Provider == standin.APNS && len(c.members) > 1 && parseAPNs(t, dl).Orca["coalescedCount"] != float64(len(c.members)) {
							t.Errorf("%s: not one summary: %s", c.name, dl.Body)
						}
					}
				}
			})
		}
	}
}
