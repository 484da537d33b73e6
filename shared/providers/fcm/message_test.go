package fcm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestGolden pins each case's message (as the SDK encodes it, here
// indented), and checks the stand-in received exactly MessageJSON's bytes.
// A client with DataOnly pins every case again as data_<case>: the form
// ORCA_PUSH_FCM_MESSAGE=data sends, DataMessageJSON's bytes.
func TestGolden(t *testing.T) {
	clk, st, c := setup(t)
	data := mustDataClient(t, clk, st)
	forms := []struct {
		prefix string
		client *fcm.Client
		json   func(push.Message, string, int64) []byte
	}{{"", c, fcm.MessageJSON}, {"data_", data, fcm.DataMessageJSON}}
	for _, form := range forms {
		for _, tc := range pushtest.Cases() {
			t.Run(form.prefix+tc.Name, func(t *testing.T) {
				st.ClearInbox()
				m := tc.Message()
				now := clk.Now().UnixMilli()
				if o := form.client.Send(context.Background(), push.Target{Platform: contract.PlatformAndroid, Token: token}, m); o.Kind != push.Sent {
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
				want := form.json(m, token, now)
				if !bytes.Equal(req.Message, want) {
					t.Errorf("wire message differs:\n wire %s\n want %s", req.Message, want)
				}
				var b bytes.Buffer
				if err := json.Indent(&b, want, "", "  "); err != nil {
					t.Fatal(err)
				}
				b.WriteByte('\n')
				pushtest.Golden(t, *update, form.prefix+tc.Name, b.Bytes())
			})
		}
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

// TestDataForm checks the rules of the data-only form that goldens show
// only once: ttl is the remaining lifetime at each send, rounded up (as in
// the notification form), android holds nothing but priority and ttl, and
// a sealed alert goes data-only from a client of either form, and a
// dismissal (sealed or not) carries no collapse_key from either client, so
// its two forms are the same bytes, while an alert keeps its collapse_key.
func TestDataForm(t *testing.T) {
	byName := map[string]pushtest.Case{}
	for _, c := range pushtest.Cases() {
		byName[c.Name] = c
	}
	type msg struct {
		Notification json.RawMessage            `json:"notification"`
		Data         map[string]string          `json:"data"`
		Android      map[string]json.RawMessage `json:"android"`
	}
	decode := func(b []byte) msg {
		t.Helper()
		var v msg
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	m := byName["single_alert"].Message()
	life := contract.EventLifetime.Milliseconds()
	for _, tt := range []struct {
		now  int64
		want string
	}{{m.Deadline - life, fmt.Sprintf(`"%ds"`, life/1000)}, {m.Deadline - 1001, `"2s"`}, {m.Deadline - 1, `"1s"`}} {
		if got := string(decode(fcm.DataMessageJSON(m, "", tt.now)).Android["ttl"]); got != tt.want {
			t.Errorf("data-only ttl at deadline−%d ms = %s, want %s", m.Deadline-tt.now, got, tt.want)
		}
	}
	for _, name := range []string{"single_alert", "dismissal", "sealed_alert", "sealed_dismissal"} {
		v := decode(fcm.DataMessageJSON(byName[name].Message(), "", pushtest.Now))
		if len(v.Android) != 2 || v.Android["priority"] == nil || v.Android["ttl"] == nil || v.Notification != nil {
			t.Errorf("%s data-only: android %v, notification %s; want only priority and ttl, no notification", name, v.Android, v.Notification)
		}
	}
	sealed := byName["sealed_alert"].Message()
	if !bytes.Equal(fcm.MessageJSON(sealed, token, pushtest.Now), fcm.DataMessageJSON(sealed, token, pushtest.Now)) {
		t.Errorf("the default client's sealed alert is not the data-only message")
	}
	if v := decode(fcm.MessageJSON(sealed, "", pushtest.Now)); v.Data["title"] != sealed.Title || v.Data["message"] != "" {
		t.Errorf("sealed alert data = %v, want the placeholder title and an empty message", v.Data)
	}
	for _, name := range []string{"dismissal", "sealed_dismissal"} {
		d := byName[name].Message()
		if v := decode(fcm.MessageJSON(d, "", pushtest.Now)); v.Android["collapse_key"] != nil {
			t.Errorf("the default client's %s carries a collapse_key: %v", name, v.Android)
		}
		if !bytes.Equal(fcm.MessageJSON(d, token, pushtest.Now), fcm.DataMessageJSON(d, token, pushtest.Now)) {
			t.Errorf("the default client's %s is not the data-only dismissal", name)
		}
	}
	if v := decode(fcm.MessageJSON(m, "", pushtest.Now)); v.Android["collapse_key"] == nil {
		t.Errorf("the default client's alert lost its collapse_key: %v", v.Android)
	}
}

// TestDataFormNeverLarger is what lets Size stand for both forms: for every
// golden case and random message up to the contract's limits (summaries,
// Gen D's fields and the characters Go escapes included), the data-only
// message is no larger than Size, the default client's message at the
// worst-case ttl.
func TestDataFormNeverLarger(t *testing.T) {
	worst := func(m push.Message) int64 { return m.Deadline - contract.EventLifetime.Milliseconds() }
	var ms []push.Message
	for _, c := range pushtest.Cases() {
		ms = append(ms, c.Message())
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 1000 {
		members := []contract.Notification{pushtest.RandomNotification(r, false, []int{1, 64}[i%2])}
		for len(members) < 1+i%4 {
			members = append(members, pushtest.RandomNotification(r, false, 64))
		}
		m := push.Build(pushtest.Host, members, pushtest.Deadline)
		m.Silent = i%3 == 0 // the data-only form's largest: sound "" and the silent channel
		ms = append(ms, m)
	}
	for _, m := range ms {
		if d, s := len(fcm.DataMessageJSON(m, "", worst(m))), fcm.Size(m); d > s {
			t.Fatalf("data-only message %d bytes, Size %d: %s", d, s, fcm.DataMessageJSON(m, "", worst(m)))
		}
	}
}
