package delivery_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestNoPlanReadsATableWhole holds that no statement the gateway runs on
// PostgreSQL is planned to read a table, or an index, whole where it looks
// rows up: on a gateway that has run a while, push_delivery_batches holds a
// day of finished batches and, most of the time, almost none pending, and a
// plan made then (a connection keeps its generic plans for its life) must
// still be right when a burst elsewhere leaves thousands pending. A partial
// index of pending batches on state alone was then nearly empty, and the
// planner read it whole rather than the key's index for any statement whose
// conditions imply its predicate: every claim, outcome and lease probe read
// all pending batches (scripts/pgcount -mode push -pending 2000: 9.1 M
// instructions a push instead of 1.0 M; migration 0012).
//
// It runs the gateway's paths through a proxy that records every statement
// prepared (admission with and without a window, joins, a dismissal, an
// inline delivery with a lease and its hand-on, a task's delivery and its
// retry, the sweep, the prune, badges, a device's removal, receipts), then
// gives the database that steady state (20,000 hosts, sessions and
// finished batches, 2,000 registrations, 20,000 events, recipients and
// fences of other hosts, none pending, analysed) and reads the generic plan
// of every statement: each scan of a table of the gateway or of one of its
// indexes must have an index condition, but for the sweep's and the
// prune's chunks (a LIMIT of a parameter), which read their set in order
// and stop, and read pending batches by an index all the same.
func TestNoPlanReadsATableWhole(t *testing.T) {
	ctx := context.Background()
	s, opts, rt := storetest.OpenCounting(t)
	e := mustDeliverEnvOn(t, mustEnvOn(t, s, clock.NewManual(start)))
	runEveryPath(t, e)
	statements := rt.Statements()

	conn := storetest.PlanConn(t, opts)
	// As a gateway that has run a while. (A new deployment's few rows are
	// read by scans, rightly: autovacuum analyses a growing table often,
	// and each analysis replans.)
	for _, q := range []string{
		`INSERT INTO push_hosts (host_fingerprint, host_public_key, created_at, last_seen_at)
			SELECT 'busy-host-' || i, 'key', i, i FROM generate_series(0, 19999) AS i`,
		`INSERT INTO push_sessions (token_hash, host_fingerprint, expires_at, created_at)
			SELECT gen_random_uuid()::text, 'busy-host-' || i, 1 << 40, i FROM generate_series(0, 19999) AS i`,
		`INSERT INTO push_devices (registration_id, host_fingerprint, device_id, platform, token,
				created_at, created_seq, updated_at)
			SELECT 'busy-phone-' || i, 'busy-host-' || (i / 10), 'd' || i, 'android', 'token', i, i, i
			FROM generate_series(0, 1999) AS i`,
		`INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
			SELECT 'event-' || i, 'busy-host-' || (i / 100), 'alert', 'f', i, i + 60000
			FROM generate_series(1, 20000) AS i`,
		`INSERT INTO push_event_recipients (event_id, registration_id, created_at, batch_id, ordinal)
			SELECT 'event-' || i, 'busy-phone-' || (i / 10), i, gen_random_uuid()::text, i
			FROM generate_series(1, 20000) AS i`,
		`INSERT INTO push_dismissed_events (host_fingerprint, notification_epoch, notification_id,
				notification_seq, created_at)
			SELECT 'busy-host-' || (i / 100), 'epoch', 'n' || i, 1, i FROM generate_series(1, 20000) AS i`,
		`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id, kind, payload_json,
				members, state, due_at, expires_at, scheduled_at, created_at, finished_at)
			SELECT gen_random_uuid()::text, 'busy-host-' || (i / 100), 'busy-phone-' || (i / 10), 'alert', '[]',
				1, 'sent', i, i + 60000, i, i, i + 1000
			FROM generate_series(1, 20000) AS i`,
		`ANALYZE push_hosts, push_sessions, push_devices, push_events, push_event_recipients,
			push_dismissed_events, push_delivery_batches`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for i, q := range statements {
		if !strings.Contains(q, "push_") {
			continue
		}
		checked++
		plan := genericPlan(t, conn, fmt.Sprintf("plan%d", i), q)
		if strings.Contains(q, "LIMIT $") {
			// The sweep's and the prune's chunks: they read their set in
			// order up to the limit, by the plan the table's size makes
			// cheapest, and are not on a push's path; but pending
			// batches, by their index (ExpireOverdue and LostBatches by
			// due time), never by reading the table.
			if strings.Contains(q, "state = 'pending'") && strings.Contains(plan, "Seq Scan on push_delivery_batches") {
				t.Errorf("a plan reads every batch to find pending ones:\n%s\n%s", q, plan)
			}
			continue
		}
		if bad := readsWhole(plan); bad != "" {
			t.Errorf("a plan reads %s whole (no index condition):\n%s\n%s", bad, q, plan)
		}
	}
	t.Logf("%d statements' plans read", checked)
	// The paths prepare some fifty statements: fewer means the recording
	// lost them.
	if checked < 40 {
		t.Fatalf("%d statements recorded, want at least 40", checked)
	}
}

// runEveryPath runs the gateway's paths on e, each of which must succeed.
func runEveryPath(t *testing.T, e *deliverEnv) {
	t.Helper()
	ctx := context.Background()
	reg := e.device(t, "hostA", "phone")

	// A window: an alert to two phones opens a batch each, a second
	// joins both, a dismissal takes one member back; a task delivers one.
	other := e.device(t, "hostA", "tablet")
	e.mustSend(t, contract.StatusQueued, "hostA", alert("a", 1), reg, other)
	id := e.sched.take()[0].BatchID
	e.mustSend(t, contract.StatusQueued, "hostA", alert("b", 2), reg, other)
	e.mustSend(t, contract.StatusQueued, "hostA", dismissal("b", 2), reg)
	e.sched.take()
	e.clock.Advance(contract.DefaultCoalesce)
	e.deliver(t, id)

	// A retry, and then its delivery; with a badge to stamp.
	if err := e.store.SetBadge(ctx, "hostA", reg, 3, e.now()); err != nil {
		t.Fatal(err)
	}
	id = e.queue(t, reg, alert("c", 3))
	e.clock.Advance(contract.DefaultCoalesce)
	e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
		return push.Outcome{Kind: push.Retry, Reason: "ServiceUnavailable"}
	}
	e.deliver(t, id)
	e.sched.take()
	e.clock.Advance(time.Hour)
	e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome { return push.Outcome{Kind: push.Sent} }
	e.deliver(t, id)
	e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
		return push.Outcome{Kind: push.Terminal, Reason: "BadTopic"} // gives the badge back
	}
	id = e.queue(t, reg, alert("d", 4))
	e.clock.Advance(contract.DefaultCoalesce)
	e.deliver(t, id)
	// A stamped batch retried past its deadline: its claim leaves it to
	// the end that gives its raise back (ClaimBatch's expireStamped).
	e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
		return push.Outcome{Kind: push.Retry, Reason: "ServiceUnavailable"}
	}
	id = e.queue(t, reg, alert("g", 7))
	e.clock.Advance(contract.DefaultCoalesce)
	e.deliver(t, id)
	e.sched.take()
	e.clock.Advance(contract.EventLifetime)
	e.deliver(t, id)
	if b := e.batch(t, id); b.State != store.BatchExpired {
		t.Fatalf("a stamped batch past its deadline: %s, want expired", b.State)
	}

	// Inline delivery with a lease at admission (no window): while the
	// first alert is in flight a second is admitted and held back, and
	// the first's end hands on to it.
	next := &recorder{}
	in, err := delivery.NewInline(e.dl, next, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	inline, err := delivery.NewAdmission(delivery.Options{Keys: sealtest.Ring(t), Digest: sealtest.DigestKey(t),
		Store: e.store, Clock: e.clock, Counters: e.counters, Scheduler: in})
	if err != nil {
		t.Fatal(err)
	}
	send := func(n contract.Notification) {
		t.Helper()
		res, err := inline.Send(ctx, "hostA", contract.SendRequest{RegistrationIDs: []string{reg}, Notification: n})
		if err != nil || res[0].Status != contract.StatusQueued {
			t.Fatalf("Send(%s) = %+v, %v, want queued", n.NotificationID, res, err)
		}
	}
	var sent []string
	e.prov.step = func(_ context.Context, _ push.Target, m push.Message) push.Outcome {
		sent = append(sent, m.NotificationID)
		if len(sent) == 1 {
			send(alert("f", 6))
		}
		return push.Outcome{Kind: push.Sent}
	}
	send(alert("e", 5))
	if !slices.Equal(sent, []string{"e", "f"}) {
		t.Fatalf("inline sends %v, want e and then f (handed on)", sent)
	}
	send(dismissal("e", 5))

	// The sweep and the prune, receipts, a device's removal.
	now := e.now()
	if _, _, err := e.store.ExpireOverdue(ctx, now, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.LostBatches(ctx, now, 1000, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Prune(ctx, now, 1000, 1000, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Receipts(ctx, "hostA", []string{"event"}, 0); err != nil {
		t.Fatal(err)
	}
	e.queue(t, reg, alert("g", 7))
	if err := e.store.DeleteDevice(ctx, "hostA", reg, e.now()); err != nil {
		t.Fatal(err)
	}

	// Alerts with a session, as /v1/send admits: counted, then (past
	// store's ringFrom) the ring built and read; then an alert counted
	// beside the ring by an instance that guesses the host counts, which
	// advances the ring.
	busy, token := e.device(t, "hostC", "phone"), e.signIn(t, "hostC")
	for i := range 45 {
		if got := e.sendAs(t, "hostC", token, alert("busy", int64(i)), busy); got != contract.StatusQueued {
			t.Fatalf("alert %d with a session: %s", i, got)
		}
	}
	second := mustEnvOn(t, e.store, e.clock)
	if got := second.sendAs(t, "hostC", token, alert("busy", 100), busy); got != contract.StatusQueued {
		t.Fatalf("an alert counted beside the ring: %s", got)
	}
}

// parameter matches a statement's parameter.
var parameter = regexp.MustCompile(`\$(\d+)`)

// genericPlan prepares q as name on conn and returns its generic plan,
// every parameter NULL (a generic plan does not depend on them).
func genericPlan(t *testing.T, conn *sql.Conn, name, q string) string {
	t.Helper()
	n := 0
	for _, m := range parameter.FindAllStringSubmatch(q, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	return storetest.Plan(t, conn, name, q, strings.TrimSuffix(strings.Repeat("NULL, ", n), ", "))
}

// scanNode matches a plan node that scans a table or an index, naming
// them: "Seq Scan on t", "Index Scan using i on t", "Index Only Scan
// Backward using i on t", "Bitmap Index Scan on i".
var scanNode = regexp.MustCompile(`(Seq Scan on (\S+)|Index (?:Only )?Scan(?: Backward)? using (\S+) on (\S+)|Bitmap Index Scan on (\S+))`)

// readsWhole returns the first scan in plan of one of the gateway's tables
// (push_…), or of one of their indexes, that has no index condition, and ""
// when there is none: such a scan reads every row of what it scans.
func readsWhole(plan string) string {
	lines := strings.Split(plan, "\n")
	for i, line := range lines {
		m := scanNode.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(m[2]+m[4]+m[5], "push_") || m[2] == "push_seal_cutoff" || m[2] == "push_events_uncounted" {
			continue // push_seal_cutoff holds one row (migration 0007), a sequence one
		}
		if strings.HasPrefix(m[1], "Seq Scan") {
			return m[1]
		}
		// The node's details are the lines below it, up to the next node.
		cond := false
		for _, d := range lines[i+1:] {
			if strings.Contains(d, "->") || scanNode.MatchString(d) {
				break
			}
			cond = cond || strings.Contains(d, "Index Cond:")
		}
		if !cond {
			return m[1]
		}
	}
	return ""
}

// TestPruneReadsBatchesByKey: the prune finds finished batches by their
// key's index (migration 0016 dropped the index by end time), also in the
// generic plan a connection keeps: on a table of 100,000 finished batches,
// analysed, no scan of push_delivery_batches in its plan is without an
// index condition. (TestNoPlanReadsATableWhole leaves the prune's chunks
// to the size of its tables, 20,000 rows, which a plan rightly reads
// whole.)
func TestPruneReadsBatchesByKey(t *testing.T) {
	ctx := context.Background()
	s, opts, rt := storetest.OpenCounting(t)
	now := start.UnixMilli()
	if _, err := s.Prune(ctx, now, 1000, 1000, 100); err != nil {
		t.Fatal(err)
	}
	statements := rt.Statements()
	i := slices.IndexFunc(statements, func(q string) bool { return strings.HasPrefix(q, "DELETE FROM push_delivery_batches") })
	if i < 0 {
		t.Fatalf("the prune's statement was not recorded among %d", len(statements))
	}
	q := statements[i]
	conn := storetest.PlanConn(t, opts)
	for _, stmt := range []string{
		`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id, kind, payload_json,
				members, state, due_at, expires_at, created_at, finished_at)
			SELECT lpad(to_hex(i), 8, '0') || '-0000-7000-8000-000000000000', 'h', 'r' || (i % 1000), 'alert',
				'[]', 1, 'sent', 0, 0, 0, i
			FROM generate_series(1, 100000) AS i`,
		`ANALYZE push_delivery_batches`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	plan := genericPlan(t, conn, "prune", q)
	if bad := readsWhole(plan); bad != "" {
		t.Errorf("the prune's plan reads %s whole:\n%s\n%s", bad, q, plan)
	}
}
