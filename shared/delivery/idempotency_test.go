package delivery_test

import (
	"strings"
	"sync"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store/storetest"
)

// TestConcurrentIdenticalSends: ten identical sends at once leave one event,
// one recipient and one batch, and all are queued.
func TestConcurrentIdenticalSends(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			var wg sync.WaitGroup
			statuses := make([][]contract.Status, 10)
			for i := range statuses {
				wg.Go(func() { statuses[i] = e.send(t, "hostA", alert("n", 1), p) })
			}
			wg.Wait()
			for i, s := range statuses {
				if len(s) != 1 || s[0] != contract.StatusQueued {
					t.Errorf("send %d = %v, want [queued]", i, s)
				}
			}
			e.mustRows(t, map[string]int64{"events": 1, "recipients": 1, "fences": 0, "batches": 1})
			if calls := e.sched.take(); len(calls) != 1 {
				t.Errorf("scheduled %v, want one batch", calls)
			}
		})
	}
}

// TestIdempotency: the event identity is (host, kind, epoch, seq), its
// content the notification without sound and with the kind normalised, and
// its deadline is fixed at first acceptance (reference-behaviour §4.1, §4.5).
func TestIdempotency(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			n := alert("n", 1)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			e.mustRows(t, map[string]int64{"events": 1, "recipients": 1, "fences": 0, "batches": 1})

			explicit := n
			explicit.Kind = contract.KindAlert
			silent := n
			off := false
			silent.Sound = &off
			changed := n
			changed.Body = "another body"
			laterExpiry := n
			laterExpiry.ExpiresAt = e.now() + 60_000
			newEpoch := n
			newEpoch.Epoch = "epoch-2"
			tests := []struct {
				name   string
				n      contract.Notification
				want   contract.Status
				events int64
			}{
				{"same", n, contract.StatusQueued, 1},
				{"explicit alert kind is the same event", explicit, contract.StatusQueued, 1},
				{"sound is not content", silent, contract.StatusQueued, 1},
				{"changed body", changed, contract.StatusError, 1},
				{"changed expiresAt", laterExpiry, contract.StatusError, 1},
				{"new epoch with the same seq", newEpoch, contract.StatusQueued, 2},
			}
			for _, tt := range tests {
				if got := e.send(t, "hostA", tt.n, p); got[0] != tt.want {
					t.Errorf("%s: status %q, want %q", tt.name, got[0], tt.want)
				}
				if got := e.rows(t)["events"]; got != tt.events {
					t.Errorf("%s: events = %d, want %d", tt.name, got, tt.events)
				}
			}
			// The new event joined the first one's open batch.
			calls := e.sched.take()
			if len(calls) != 1 || e.batch(t, calls[0].BatchID).Members != 2 {
				t.Errorf("scheduled %v, want one batch of 2 members", calls)
			}

			// A second phone still gets a known event within its life: a
			// batch of its own, not only a queued answer.
			p2 := e.device(t, "hostA", "phone2")
			e.clock.Advance(contract.EventLifetime - 1)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p2)
			if calls := e.sched.take(); len(calls) != 1 || e.batch(t, calls[0].BatchID).RegistrationID != p2 {
				t.Errorf("the second phone's send scheduled %v, want one batch of its own", calls)
			}
			// Other content under the known identity is refused for a
			// phone that never had the event too, and nothing is recorded.
			p3 := e.device(t, "hostA", "phone3")
			before := e.rows(t)
			e.mustSend(t, contract.StatusError, "hostA", changed, p3)
			e.mustRows(t, before)
			if calls := e.sched.take(); len(calls) != 0 {
				t.Errorf("changed content to a new phone scheduled %v, want nothing", calls)
			}
			// At the deadline the duplicate is refused, for every phone,
			// also one that never had it.
			e.clock.Advance(1)
			e.mustSend(t, contract.StatusError, "hostA", n, p, p2, p3)
		})
	}
}

// TestDeadline: expiresAt caps the deadline, which never passes five
// minutes after first acceptance; an expiresAt already past is error.
func TestDeadline(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p, dead := e.device(t, "hostA", "phone"), e.deadDevice(t, "hostA", "old")
			past := alert("n", 1)
			past.ExpiresAt = e.now()
			before := e.rows(t)
			if got := e.send(t, "hostA", past, p, dead, "unknown"); got[0] != contract.StatusError ||
				got[1] != contract.StatusDead || got[2] != contract.StatusError {
				t.Fatalf("past expiresAt = %v, want [error dead error]", got)
			}
			e.mustRows(t, before)

			soon := alert("n", 2)
			soon.ExpiresAt = e.now() + 60_000
			late := alert("n", 3)
			late.ExpiresAt = e.now() + 3_600_000
			e.mustSend(t, contract.StatusQueued, "hostA", soon, p)
			e.mustSend(t, contract.StatusQueued, "hostA", late, p)
			calls := e.sched.take()
			if len(calls) != 1 {
				t.Fatalf("scheduled %v, want one batch", calls)
			}
			// The two joined: the batch's deadline is the lower one.
			if b := e.batch(t, calls[0].BatchID); b.ExpiresAt != soon.ExpiresAt || b.Members != 2 {
				t.Errorf("batch expires %d with %d members, want %d and 2", b.ExpiresAt, b.Members, soon.ExpiresAt)
			}
		})
	}
}

// TestCrossInstanceQuota: two gateway instances (two pools on one database)
// with 299 alerts used admit exactly one of six new events sent at once
// (reference-behaviour §4.3).
func TestCrossInstanceQuota(t *testing.T) {
	_, e1, e2 := twoInstances(t)
	p := e1.device(t, "hostA", "phone")
	for i := range contract.AlertQuota - 1 {
		e1.mustSend(t, contract.StatusQueued, "hostA", alert("n", int64(i)), p)
	}
	var wg sync.WaitGroup
	statuses := make([]contract.Status, 6)
	for i := range statuses {
		e := []*env{e1, e2}[i%2]
		wg.Go(func() { statuses[i] = e.send(t, "hostA", alert("new", int64(1000+i)), p)[0] })
	}
	wg.Wait()
	mustAdmitOne(t, statuses)
	if got := e1.rows(t)["events"]; got != contract.AlertQuota {
		t.Fatalf("events = %d, want %d", got, contract.AlertQuota)
	}
}

// TestUndeliverableSingleRefused: a notification within the contract's 3000
// bytes whose provider payload cannot fit 4 KB once escaped is an error for
// every registration, and nothing is written.
func TestUndeliverableSingleRefused(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			reg := e.device(t, "host", "phone")
			n := alert(strings.Repeat("<", 2000), 1)
			n.Body = strings.Repeat("\u2028", 150)
			if b := n.AppendJSON(nil, true); len(b) > contract.MaxNotificationBytes {
				t.Fatalf("the case is %d bytes, over the contract's limit", len(b))
			}
			before := e.rows(t)
			if got := e.send(t, "host", n, reg); len(got) != 1 || got[0] != contract.StatusError {
				t.Fatalf("send = %v, want [error]", got)
			}
			e.mustRows(t, before)
		})
	}
}

// mustAdmitOne fails unless statuses holds one queued and the rest
// rate_limited: sends at once for the last unit of a quota.
func mustAdmitOne(t *testing.T, statuses []contract.Status) {
	t.Helper()
	count := map[contract.Status]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[contract.StatusQueued] != 1 || count[contract.StatusRateLimited] != len(statuses)-1 {
		t.Fatalf("statuses %v, want 1 queued and the rest rate_limited", statuses)
	}
}
