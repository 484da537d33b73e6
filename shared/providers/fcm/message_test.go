package fcm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestGolden pins each case's message (as the SDK encodes it, here
// indented), and checks the stand-in received exactly MessageJSON's bytes.
func TestGolden(t *testing.T) {
	clk, st, c := setup(t)
	for _, tc := range pushtest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			st.ClearInbox()
			m := tc.Message()
			now := clk.Now().UnixMilli()
			if o := c.Send(context.Background(), push.Target{Platform: contract.PlatformAndroid, Token: token}, m); o.Kind != push.Sent {
				t.Fatalf("Send = %+v, want sent", o)
			}
			in := st.Inbox()
			if len(in) != 1 {
				t.Fatalf("inbox holds %d deliveries, want 1", len(in))
			}
			var req struct {
				Message json.RawMessage `json:"message"`
			}
			if err := json.Unmarshal(in[0].Body, &req); err != nil {
				t.Fatal(err)
			}
			want := fcm.MessageJSON(m, token, now)
			if !bytes.Equal(req.Message, want) {
				t.Errorf("wire message differs from MessageJSON:\n wire %s\n want %s", req.Message, want)
			}
			var b bytes.Buffer
			if err := json.Indent(&b, want, "", "  "); err != nil {
				t.Fatal(err)
			}
			b.WriteByte('\n')
			pushtest.Golden(t, *update, tc.Name, b.Bytes())
		})
	}
}

// TestMessage checks the rules of reference-behaviour §7.2 that goldens
// show only once: ttl rounding and bounds, the silent channel, and that
// summaryMembers is a JSON string that parses back.
func TestMessage(t *testing.T) {
	m := pushtest.Cases()[2].Message() // summary_needs_input
	type msg struct {
		Data    map[string]string `json:"data"`
		Android struct {
			TTL          string `json:"ttl"`
			CollapseKey  string `json:"collapse_key"`
			Notification struct {
				ChannelID string `json:"channel_id"`
			} `json:"notification"`
		} `json:"android"`
	}
	decode := func(b []byte) msg {
		var v msg
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	life := contract.EventLifetime.Milliseconds()
	full := fmt.Sprintf("%ds", life/1000)
	ttls := []struct {
		now  int64
		want string
	}{
		{m.Deadline - life, full},
		{m.Deadline - life + 999, full},
		{m.Deadline - life + 1000, fmt.Sprintf("%ds", life/1000-1)},
		{m.Deadline - 1, "1s"},
		{m.Deadline - 3*life, full},
	}
	for _, tt := range ttls {
		if got := decode(fcm.MessageJSON(m, "", tt.now)).Android.TTL; got != tt.want {
			t.Errorf("ttl at deadline−%d ms = %q, want %q", m.Deadline-tt.now, got, tt.want)
		}
	}
	v := decode(fcm.MessageJSON(m, "", pushtest.Now))
	var members []push.Member
	if err := json.Unmarshal([]byte(v.Data["summaryMembers"]), &members); err != nil || len(members) != 3 {
		t.Errorf("data.summaryMembers = %q, want the JSON of 3 members", v.Data["summaryMembers"])
	}
	if v.Data["coalescedCount"] != "3" {
		t.Errorf("data.coalescedCount = %q, want \"3\"", v.Data["coalescedCount"])
	}
	if len(v.Android.CollapseKey) != 32 {
		t.Errorf("collapse_key = %q, want 32 hex characters", v.Android.CollapseKey)
	}
	if got := v.Android.Notification.ChannelID; got != contract.AndroidChannel {
		t.Errorf("channel_id = %q, want %q", got, contract.AndroidChannel)
	}
	m.Silent = true
	if got := decode(fcm.MessageJSON(m, "", pushtest.Now)).Android.Notification.ChannelID; got != contract.AndroidSilentChannel {
		t.Errorf("silent channel_id = %q, want %q", got, contract.AndroidSilentChannel)
	}
	if got, want := fcm.Size(m), len(fcm.MessageJSON(m, "", m.Deadline-life)); got != want {
		t.Errorf("Size = %d, want %d", got, want)
	}
}
