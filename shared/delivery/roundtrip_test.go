package delivery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// mustCountingStore opens a store on PostgreSQL behind the proxy that counts
// (and can cut) round trips, with at most poolMax connections (0: the
// default).
func mustCountingStore(t *testing.T, poolMax int) (*store.Store, *storetest.RoundTrips) {
	t.Helper()
	opts, rt := storetest.CountingPostgres(t)
	if poolMax > 0 {
		opts.PoolMax = poolMax
	}
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rt
}

// The SQL round trips of one send, BEGIN and COMMIT included, whatever its
// number of registrations (issue "Send and deliver at the database's pace":
// at most 3). A new alert takes newAlertRoundTrips: BEGIN, the host lock,
// the session, the event and every recipient in one, the batches and COMMIT
// in the other. A send that also has to read why a registration got no
// recipient, or a dismissal's fence and the batches it cancels, takes one
// more: maxRoundTrips.
const (
	newAlertRoundTrips = 2
	maxRoundTrips      = 3
)

// TestRoundTrips counts, through a proxy in front of PostgreSQL, the SQL
// round trips admission makes per registration in each path, BEGIN, the
// host lock and COMMIT included, once every statement is prepared on its
// connection. Run with -v for the table.
func TestRoundTrips(t *testing.T) {
	s, rt := mustCountingStore(t, 0)
	e := mustEnvOn(t, s, clock.NewManual(start))
	var phones []string
	for i := range 5 {
		phones = append(phones, e.device(t, "hostA", fmt.Sprintf("phone%d", i)))
	}
	p, calm := phones[0], e.device(t, "hostA", "calm")
	seq := int64(0)
	next := func() int64 { seq++; return seq }
	// Each path runs on a quiet registration: the previous batches are due
	// (still pending: nothing delivers them here). calm never gets an alert.
	quiet := func() { e.clock.Advance(contract.DefaultCoalesce + time.Millisecond) }
	paths := []struct {
		name  string
		setup func()
		send  func()
		regs  int
		max   int64
	}{
		{"new alert opens a batch", quiet, func() { e.send(t, "hostA", alert("a", next()), p) }, 1, newAlertRoundTrips},
		{"new alert joins the open batch", func() { quiet(); e.send(t, "hostA", alert("a", next()), p) },
			func() { e.send(t, "hostA", alert("b", next()), p) }, 1, newAlertRoundTrips},
		{"alert without id flushes and opens", func() { quiet(); e.send(t, "hostA", alert("a", next()), p) },
			func() { e.send(t, "hostA", bell(next()), p) }, 1, newAlertRoundTrips},
		{"new alert to 5 phones", quiet, func() { e.send(t, "hostA", alert("a", next()), phones...) }, 5, newAlertRoundTrips},
		{"new alert to 5 phones, 2 of them unknown", quiet, func() {
			e.send(t, "hostA", alert("a", next()), append(phones[:3:3], "unknown-1", "unknown-2")...)
		}, 5, maxRoundTrips},
		{"repeat of a queued alert", func() { quiet(); seq++; e.send(t, "hostA", alert("a", seq), p) },
			func() { e.send(t, "hostA", alert("a", seq), p) }, 1, maxRoundTrips},
		{"alert behind a fence", func() { quiet(); e.send(t, "hostA", dismissal("f", 100+next()), p) },
			func() { e.send(t, "hostA", alert("f", next()), p) }, 1, maxRoundTrips},
		{"dismissal, nothing pending", quiet, func() { e.send(t, "hostA", dismissal("d", next()), calm) }, 1, maxRoundTrips},
		{"dismissal cancelling pending alerts on 5 phones", func() { quiet(); seq++; e.send(t, "hostA", alert("c", seq), phones...) },
			func() { e.send(t, "hostA", dismissal("c", seq), phones...) }, 5, maxRoundTrips},
	}
	t.Logf("%-40s %14s %18s", "path", "round trips", "per registration")
	for _, path := range paths {
		var got int64
		for range 4 { // the first runs prepare the statements
			path.setup()
			before := rt.Load()
			path.send()
			got = rt.Load() - before
		}
		per := float64(got) / float64(path.regs)
		t.Logf("%-40s %14d %18.1f", path.name, got, per)
		if got > path.max {
			t.Errorf("%s: %d round trips, want at most %d", path.name, got, path.max)
		}
	}
}

// TestConnectionLostMidAdmission drops the database connection at each
// round trip of accepting a new alert to 1 and to 5 registrations, once
// before the server sees it and once after (only the answer is lost), and
// checks that the send fails, that the alert's rows are there in full or
// not at all (one transaction for the whole request), and that sending it
// again, as the host's retry does, answers queued for every registration and
// leaves exactly one event and a recipient and a batch per registration.
func TestConnectionLostMidAdmission(t *testing.T) {
	ctx := context.Background()
	s, rt := mustCountingStore(t, 1) // one connection: the round trips counted are the send's
	e := mustEnvOn(t, s, clock.NewManual(start))
	var phones []string
	for i := range 5 {
		phones = append(phones, e.device(t, "hostA", fmt.Sprintf("phone%d", i)))
	}
	seq := int64(0)
	quiet := func() { e.clock.Advance(contract.DefaultCoalesce + time.Millisecond) }
	for _, regs := range []int{1, 5} {
		ids := phones[:regs]
		for roundTrip := int64(1); roundTrip <= newAlertRoundTrips; roundTrip++ {
			for _, delivered := range []bool{false, true} {
				name := fmt.Sprintf("%d registrations, round trip %d, delivered %v", regs, roundTrip, delivered)
				// A new connection prepares its statements on first use: warm it.
				for range 2 {
					quiet()
					seq++
					e.mustSend(t, contract.StatusQueued, "hostA", alert("warm", seq), ids...)
				}
				quiet()
				seq++
				n := alert("lost", seq)
				before := e.rows(t)
				rt.Cut(roundTrip, delivered)
				if _, err := e.adm.Send(ctx, "hostA", contract.SendRequest{RegistrationIDs: ids, Notification: n}); err == nil {
					t.Fatalf("%s: Send succeeded through a dropped connection", name)
				}
				after := e.rows(t)
				committed := after["events"] == before["events"]+1
				want := map[string]int64{"events": 1, "recipients": int64(regs), "batches": int64(regs)}
				for k, added := range want {
					if !committed {
						added = 0
					}
					if after[k] != before[k]+added {
						t.Errorf("%s: %s %d → %d, not all or nothing (%v → %v)", name, k, before[k], after[k], before, after)
					}
				}
				if committed != (delivered && roundTrip == newAlertRoundTrips) {
					t.Errorf("%s: committed = %v", name, committed)
				}
				e.mustSend(t, contract.StatusQueued, "hostA", n, ids...)
				again := e.rows(t)
				for k, added := range want {
					if again[k] != before[k]+added {
						t.Errorf("%s: after sending again %s = %d, want %d", name, k, again[k], before[k]+added)
					}
				}
			}
		}
	}
}
