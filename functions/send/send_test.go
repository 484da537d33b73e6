package send_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
	"onorca.dev/push/shared/store/storetest"
)

// TestSendStatuses covers each cause of each status of reference-behaviour
// §4.7 on its own, through the real handler and a signed-in host.
func TestSendStatuses(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, storetest.Open(t, d))
			h, other := g.mustHost(t), g.mustHost(t)
			phone, dead := h.mustDevice(t, "phone"), g.mustDeadDevice(t, h, "old-phone")
			foreign := other.mustDevice(t, "phone")
			now := g.clock.Now().UnixMilli()

			h.mustSend(t, alert("dup", 1), phone)
			dismiss := alert("fenced", 9)
			dismiss.Kind = contract.KindDismiss
			h.mustSend(t, dismiss, phone)
			changed := alert("dup", 1)
			changed.Title = "Changed"
			expired := alert("late", 2)
			expired.ExpiresAt = now
			// The other host spends its alert quota, so its next new alert
			// is over it.
			for i := range contract.AlertQuota {
				other.mustSend(t, alert("q", int64(i)), foreign)
			}

			tests := []struct {
				name string
				h    host
				n    contract.Notification
				id   string
				want contract.Status
				// writes reports whether rows change.
				writes bool
			}{
				{"queued: accepted", h, alert("new", 3), phone, contract.StatusQueued, true},
				{"queued: duplicate with the same content", h, alert("dup", 1), phone, contract.StatusQueued, false},
				{"queued: alert behind a dismissal fence", h, alert("fenced", 8), phone, contract.StatusQueued, true},
				{"dead: registration marked dead", h, alert("x", 4), dead, contract.StatusDead, false},
				{"rate_limited: new event over quota", other, alert("q", 1000), foreign, contract.StatusRateLimited, false},
				{"error: unknown registration", h, alert("x", 5), "no-such-registration", contract.StatusError, false},
				{"error: another host's registration", h, alert("x", 6), foreign, contract.StatusError, false},
				{"error: same identity, changed content", h, changed, phone, contract.StatusError, false},
				{"error: expiresAt already passed", h, expired, phone, contract.StatusError, false},
			}
			for _, tt := range tests {
				before := g.rowCounts(t)
				got := tt.h.mustSend(t, tt.n, tt.id)
				want := []contract.SendResult{{RegistrationID: tt.id, Status: tt.want}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: results (-want +got):\n%s", tt.name, diff)
				}
				if !tt.writes {
					g.mustUnchanged(t, before)
				}
			}

			// error: a duplicate after the event's five-minute life.
			g.clock.Advance(contract.EventLifetime)
			got := h.mustSend(t, alert("dup", 1), phone)
			if diff := cmp.Diff([]contract.SendResult{{RegistrationID: phone, Status: contract.StatusError}}, got); diff != "" {
				t.Errorf("duplicate after the event's life (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSendResultsOrder: results come back in the request's order with
// duplicates removed; a repeated id is one result, one event, one batch.
func TestSendResultsOrder(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, storetest.Open(t, d))
			h := g.mustHost(t)
			p1, p2, dead := h.mustDevice(t, "p1"), h.mustDevice(t, "p2"), g.mustDeadDevice(t, h, "p3")
			got := h.mustSend(t, alert("a", 1), p2, "unknown", p1, p2, dead, p1)
			want := []contract.SendResult{
				{RegistrationID: p2, Status: contract.StatusQueued},
				{RegistrationID: "unknown", Status: contract.StatusError},
				{RegistrationID: p1, Status: contract.StatusQueued},
				{RegistrationID: dead, Status: contract.StatusDead},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}

			before := g.rowCounts(t)
			got = h.mustSend(t, alert("b", 2), p1, p1, p1)
			if diff := cmp.Diff([]contract.SendResult{{RegistrationID: p1, Status: contract.StatusQueued}}, got); diff != "" {
				t.Errorf("[id, id, id] results (-want +got):\n%s", diff)
			}
			after := g.rowCounts(t)
			for _, table := range []string{"push_events", "push_event_recipients"} {
				if after[table] != before[table]+1 {
					t.Errorf("[id, id, id] added %d rows to %s, want 1", after[table]-before[table], table)
				}
			}
			// The alert joined p1's open batch: still one batch per phone.
			if after["push_delivery_batches"] != 2 || len(g.sched.at) != 2 {
				t.Errorf("%d batches, %d scheduled; want 2 and 2", after["push_delivery_batches"], len(g.sched.at))
			}
		})
	}
}

// TestSendInvalid: every body the contract refuses is 400 invalid_request
// with no row changed; the bodies it accepts are answered 200 (to an unknown
// registration, so nothing is written either).
func TestSendInvalid(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, storetest.Open(t, d))
			h := g.mustHost(t)
			h.mustDevice(t, "phone")
			for _, tt := range append(contracttest.Sends(), moreSends()...) {
				before := g.rowCounts(t)
				status, body := h.post(t, []byte(tt.Body))
				switch {
				case tt.OK && status != http.StatusOK:
					t.Errorf("%s: %d %s, want 200", tt.Name, status, body)
				case !tt.OK && (status != http.StatusBadRequest || string(body) != `{"error":"invalid_request"}`):
					t.Errorf("%s: %d %s, want 400 invalid_request", tt.Name, status, body)
				}
				g.mustUnchanged(t, before)
			}
		})
	}
}

// moreSends are refused and accepted bodies beyond contracttest's.
func moreSends() []contracttest.Case {
	base := contracttest.SendJSON("")
	repl := func(old, new string) string { return strings.Replace(base, old, new, 1) }
	// A notification whose JSON is exactly MaxNotificationBytes, and one
	// byte more.
	sized := func(extra int) string {
		n := alert(strings.Repeat("n", 1000), 1)
		n.WorktreeID = "w"
		pad := contract.MaxNotificationBytes - len(n.AppendJSON(nil, true)) + extra
		n.WorktreeID += strings.Repeat("w", pad)
		b, _ := json.Marshal(n)
		return `{"v":1,"registrationIds":["r1"],"notification":` + string(b) + `}`
	}
	return []contracttest.Case{
		{Name: "notification at the byte limit", Body: sized(0), OK: true},
		{Name: "notification one byte over the limit", Body: sized(1)},
		{Name: "v 2", Body: repl(`"v":1`, `"v":2`)},
		{Name: "v missing", Body: repl(`"v":1,`, ``)},
		{Name: "v string", Body: repl(`"v":1`, `"v":"1"`)},
		{Name: "registration id 129", Body: repl(`["r1"]`, `["`+strings.Repeat("r", 129)+`"]`)},
		{Name: "registration id empty", Body: repl(`["r1"]`, `[""]`)},
		{Name: "registration ids null", Body: repl(`["r1"]`, `null`)},
		{Name: "repeated key", Body: repl(`"title":"t"`, `"title":"t","title":"u"`)},
		{Name: "trailing data", Body: base + `{}`},
		{Name: "array body", Body: `[` + base + `]`},
		{Name: "null body", Body: `null`},
		{Name: "notification null", Body: `{"v":1,"registrationIds":["r1"],"notification":null}`},
		{Name: "title missing", Body: repl(`"title":"t",`, ``)},
		{Name: "body missing", Body: repl(`,"body":""`, ``)},
		{Name: "source missing", Body: repl(`"source":"agent-task-complete",`, ``)},
		{Name: "seq missing", Body: repl(`"notificationSeq":1,`, ``)},
		{Name: "epoch missing", Body: repl(`"notificationEpoch":"e1",`, ``)},
		{Name: "epoch 128", Body: repl(`"notificationEpoch":"e1"`, `"notificationEpoch":"`+strings.Repeat("e", 128)+`"`), OK: true},
		{Name: "agent state number", Body: repl(`"agentState":null`, `"agentState":1`)},
		{Name: "sound null", Body: contracttest.SendJSON(`"sound":null`)},
		{Name: "kind null", Body: contracttest.SendJSON(`"kind":null`)},
		{Name: "expires fraction", Body: contracttest.SendJSON(`"expiresAt":1.5`)},
		{Name: "expires over max safe", Body: contracttest.SendJSON(`"expiresAt":9007199254740992`)},
		{Name: "id null", Body: contracttest.SendJSON(`"notificationId":null`)},
		{Name: "id DEL", Body: contracttest.SendJSON(`"notificationId":"a\u007fb"`)},
		{Name: "title 80 ascii", Body: repl(`"title":"t"`, `"title":"`+strings.Repeat("t", 80)+`"`), OK: true},
		{Name: "title 81 ascii", Body: repl(`"title":"t"`, `"title":"`+strings.Repeat("t", 81)+`"`)},
		{Name: "worktree 2048", Body: contracttest.SendJSON(`"worktreeId":"` + strings.Repeat("w", 2048) + `"`), OK: true},
		{Name: "seq zero", Body: repl(`"notificationSeq":1`, `"notificationSeq":0`), OK: true},
		{Name: "whitespace around the body", Body: " \n" + base + "\n ", OK: true},
		{Name: "not an object", Body: `"send"`},
	}
}

// TestSendEdge: the edge runs before the schema: a send without a bearer is
// 401 even when oversized, an oversized body is 413, and another method is
// 405; none writes a row.
func TestSendEdge(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, storetest.Open(t, d))
			h := g.mustHost(t)
			before := g.rowCounts(t)
			big := contracttest.SendJSON("") + strings.Repeat(" ", contract.MaxBodyBytes)
			resp, err := g.srv.Client().Post(g.srv.URL+"/v1/send", "application/json", strings.NewReader(big))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("unauthenticated oversized send = %d, want 401", resp.StatusCode)
			}
			if status, body := h.post(t, []byte(big)); status != http.StatusRequestEntityTooLarge {
				t.Errorf("oversized send = %d %s, want 413", status, body)
			}
			exact := contracttest.SendJSON("")
			exact += strings.Repeat(" ", contract.MaxBodyBytes-len(exact))
			if status, body := h.post(t, []byte(exact)); status != http.StatusOK {
				t.Errorf("send of exactly %d bytes = %d %s, want 200", contract.MaxBodyBytes, status, body)
			}
			get, err := h.Raw(t.Context(), http.MethodGet, "/v1/send", nil)
			if err != nil {
				t.Fatal(err)
			}
			get.Body.Close()
			if get.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("GET /v1/send = %d, want 405", get.StatusCode)
			}
			g.mustUnchanged(t, before)
		})
	}
}

// TestSendRoundTrips counts the SQL round trips of whole requests through a
// proxy in front of PostgreSQL, the bearer's session included: a new alert
// to 1 or to 5 phones costs 2 once the edge remembers the bearer, since
// admission reads the session in its first statement, all registrations in
// one transaction (see delivery's TestRoundTrips for each path). Run with -v
// for the numbers.
func TestSendRoundTrips(t *testing.T) {
	s, _, rt := storetest.OpenCounting(t)
	g := mustGateway(t, s)
	h := g.mustHost(t)
	var phones []string
	for i := range 5 {
		phones = append(phones, h.mustDevice(t, fmt.Sprintf("phone%d", i)))
	}
	for _, tt := range []struct {
		regs int
		max  int64
	}{{1, 2}, {5, 2}} {
		var got int64
		for seq := range 4 { // the first requests prepare the statements
			g.clock.Advance(contract.DefaultCoalesce)
			before := rt.Load()
			h.mustSend(t, alert("n", int64(100*tt.regs+seq)), phones[:tt.regs]...)
			got = rt.Load() - before
		}
		t.Logf("new alert to %d registrations: %d round trips, %.1f per registration", tt.regs, got, float64(got)/float64(tt.regs))
		if got > tt.max {
			t.Errorf("new alert to %d registrations: %d round trips, want at most %d", tt.regs, got, tt.max)
		}
	}
}
