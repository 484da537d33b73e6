package apns_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sideshow/apns2"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestGolden sends each case through the real client to the stand-in and
// pins what arrived: method, path, headers (but the token) and body. The
// body on the wire must be exactly Body's bytes.
func TestGolden(t *testing.T) {
	_, st, c := setup(t)
	for _, tc := range pushtest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			st.ClearInbox()
			m := tc.Message()
			target := push.Target{Platform: contract.PlatformIOS, Token: token, APNSEnvironment: contract.APNSSandbox}
			if o := c.Send(context.Background(), target, m); o.Kind != push.Sent {
				t.Fatalf("Send = %+v, want sent", o)
			}
			in := st.Inbox()
			if len(in) != 1 {
				t.Fatalf("inbox holds %d deliveries, want 1", len(in))
			}
			d := in[0]
			if !bytes.Equal(d.Body, apns.Body(m)) {
				t.Errorf("wire body differs from Body:\n wire %s\n Body %s", d.Body, apns.Body(m))
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "%s %s (host %s)\n", d.Method, d.Path, d.Host)
			keys := make([]string, 0, len(d.Headers))
			for k := range d.Headers {
				if k != "authorization" {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "%s: %s\n", k, d.Headers[k])
			}
			fmt.Fprintf(&b, "\n%s\n\n", d.Body)
			if err := json.Indent(&b, d.Body, "", "  "); err != nil {
				t.Fatal(err)
			}
			b.WriteByte('\n')
			pushtest.Golden(t, *update, tc.Name, b.Bytes())
		})
	}
}

// TestBodyMatchesEncodingJSON checks Body against what apns2 puts on the
// wire for it: json.Marshal of the notification, which re-escapes the
// payload.
func TestBodyMatchesEncodingJSON(t *testing.T) {
	m := push.Build("fp", []contract.Notification{{
		NotificationID: `<&>"\`, Epoch: "e\u2028\u2029😀", Source: contract.SourcePlugin,
		Title: "a <b> & \x01\t", Body: "\u2028", WorktreeID: "é",
	}}, pushtest.Deadline)
	body := apns.Body(m)
	wire, err := json.Marshal(&apns2.Notification{Payload: body})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wire, body) {
		t.Errorf("json.Marshal changed Body:\n got %s\nwant %s", wire, body)
	}
	if !json.Valid(body) {
		t.Errorf("Body is not JSON: %s", body)
	}
}

// TestBodyEncoding checks Body on random messages up to the contract's
// limits: it is valid JSON, encoding/json leaves it as it is, every string
// is written as encoding/json writes it, and it decodes to the message.
func TestBodyEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 300 {
		members := []contract.Notification{pushtest.RandomNotification(r, false, []int{1, 64}[i%2])}
		for len(members) < 1+i%4 {
			members = append(members, pushtest.RandomNotification(r, false, 64))
		}
		m := push.Build(pushtest.Host, members, pushtest.Deadline)
		m.Title += "\xff\x7f" // invalid UTF-8 and DEL, which contract never yields
		body := apns.Body(m)
		wire, err := json.Marshal(&apns2.Notification{Payload: body})
		if err != nil || !bytes.Equal(wire, body) {
			t.Fatalf("encoding/json changes Body (%v):\n%s", err, body)
		}
		title, _ := json.Marshal(m.Title)
		if !bytes.Contains(body, append(append([]byte(`"title":`), title...), `,"body":`...)) {
			t.Fatalf("title not written as encoding/json writes it: %s", body)
		}
		var got struct {
			Aps struct {
				Alert struct{ Title, Body string }
			}
			Orca struct {
				WorktreeID     string        `json:"worktreeId"`
				NotificationID string        `json:"notificationId"`
				SummaryMembers []push.Member `json:"summaryMembers"`
				PaneKey        string        `json:"paneKey"`
				ExecutionHost  string        `json:"executionHost"`
			}
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		want := got
		want.Aps.Alert.Title, want.Aps.Alert.Body = string([]rune(m.Title)), m.Body
		want.Orca.WorktreeID, want.Orca.NotificationID, want.Orca.SummaryMembers = m.WorktreeID, m.NotificationID, m.SummaryMembers
		want.Orca.PaneKey, want.Orca.ExecutionHost = m.PaneKey, m.ExecutionHost
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Body decodes differently (-want +got):\n%s", diff)
		}
	}
}
