package store_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestExpireOverdueBeforeDue: the expiry reads pending batches through the
// due-time index (migration 0009), so it must still find a batch whose
// deadline came before its due time, as a join with a shorter deadline
// leaves one (up to the coalescing window before it), and leave one whose
// deadline is still ahead.
func TestExpireOverdueBeforeDue(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			reg := mustDevice(t, s, "hostA", "phone")
			const now = 1_000_000
			window := contract.MaxCoalesce.Milliseconds()
			var early, later string
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				var err error
				b := store.NewBatch{Host: "hostA", RegistrationID: reg, Kind: contract.KindAlert, Payload: `[1]`,
					Members: 1, DueAt: now + window - 1, ExpiresAt: now - 1}
				if early, err = tx.InsertBatch(ctx, b, now-window); err != nil {
					return err
				}
				b.ExpiresAt = now + 1
				later, err = tx.InsertBatch(ctx, b, now-window)
				return err
			})
			n, _, err := s.ExpireOverdue(ctx, now, 10)
			if err != nil || n != 1 {
				t.Fatalf("ExpireOverdue = %d, %v; want 1", n, err)
			}
			for id, want := range map[string]store.BatchState{early: store.BatchExpired, later: store.BatchPending} {
				b, err := s.Batch(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if b.State != want {
					t.Errorf("batch due %d, expiring %d: %s, want %s", b.DueAt-now, b.ExpiresAt-now, b.State, want)
				}
			}
		})
	}
}

// TestPayloadStoredExternal: migration 0010 is marked "-- postgres only":
// PostgreSQL stores a batch's sealed payload EXTERNAL (no compression
// attempt, issue 33), and SQLite, which has no such setting, migrates past it
// (every SQLite test opens a store).
func TestPayloadStoredExternal(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		if d.Name != "postgres" {
			continue
		}
		opts := d.Options(t)
		s, err := store.Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var storage string
		err = storetest.SQL(t, opts).QueryRow(`SELECT attstorage FROM pg_attribute
			WHERE attrelid = 'push_delivery_batches'::regclass AND attname = 'payload_json'`).Scan(&storage)
		if err != nil || storage != "e" {
			t.Errorf("payload_json storage %q, %v; want e (EXTERNAL)", storage, err)
		}
	}
}

// recordEvent records event id of hostA at now for regs, each a recipient,
// as a send does (StartSend): the event when it is new, and the recipients
// it does not have yet.
func recordEvent(t *testing.T, s *store.Store, id string, now int64, regs ...string) {
	t.Helper()
	start := store.SendStart{Add: true, NoJoin: true, Event: store.NewEvent{ID: id, Host: "hostA",
		Kind: contract.KindAlert, Fingerprint: "fp", RegistrationIDs: regs,
		Deadline: now + contract.EventLifetime.Milliseconds(), Quota: 100}}
	for _, reg := range regs {
		start.Recipients = append(start.Recipients, store.Recipient{EventID: id, RegistrationID: reg, Host: "hostA",
			Fingerprint: "fp", Kind: contract.KindAlert, BatchID: "b-" + id + "-" + reg})
	}
	mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
		got, err := tx.StartSend(context.Background(), start, now)
		for i, added := range got.Added {
			if !added {
				t.Errorf("recipient %s of %s not recorded", regs[i], id)
			}
		}
		return err
	})
}

// recipientsOf returns the stored recipients as event/registration pairs,
// in order, and fails t if any has no event.
func recipientsOf(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT r.event_id || '/' || r.registration_id, e.event_id IS NOT NULL
		FROM push_event_recipients r LEFT JOIN push_events e ON e.event_id = r.event_id
		ORDER BY r.event_id, r.registration_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			pair  string
			event bool
		)
		if err := rows.Scan(&pair, &event); err != nil {
			t.Fatal(err)
		}
		if !event {
			t.Errorf("recipient %s outlived its event", pair)
		}
		out = append(out, pair)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPruneRecipientsWithTheirEvent: an event past the retention goes with
// every recipient it has, also one recorded after it (a send that repeated
// its id) and younger than the retention itself (migration 0011); a chunk
// counts events, and no chunk leaves a recipient without its event (both
// databases).
func TestPruneRecipientsWithTheirEvent(t *testing.T) {
	ctx := context.Background()
	const t0 = 1_000_000_000
	retention := contract.Retention.Milliseconds()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			s := openAgain(t, opts)
			db := storetest.SQL(t, opts)
			p1, p2 := mustDevice(t, s, "hostA", "phone"), mustDevice(t, s, "hostA", "tablet")
			recordEvent(t, s, "e1", t0, p1)
			recordEvent(t, s, "e2", t0+10, p1, p2)
			recordEvent(t, s, "e1", t0+60_000, p2) // later, within e1's life
			recordEvent(t, s, "e3", t0+120_000, p1)
			if got := recipientsOf(t, db); len(got) != 5 {
				t.Fatalf("recipients %v, want 5", got)
			}

			// The cut-off falls between e2 and e1's second recipient.
			now := t0 + 30_000 + retention
			for _, want := range []struct {
				events, recipients int64
				left               []string
			}{
				{1, 2, []string{"e2/" + p1, "e2/" + p2, "e3/" + p1}},
				{1, 2, []string{"e3/" + p1}},
				{0, 0, []string{"e3/" + p1}},
			} {
				n, err := s.Prune(ctx, now, contract.HostRetention.Milliseconds(), retention, 1)
				if err != nil {
					t.Fatal(err)
				}
				if n["push_events"] != want.events || n["push_event_recipients"] != want.recipients {
					t.Errorf("pruned %d events and %d recipients, want %d and %d",
						n["push_events"], n["push_event_recipients"], want.events, want.recipients)
				}
				slices.Sort(want.left) // registration ids are random
				if diff := cmp.Diff(want.left, recipientsOf(t, db)); diff != "" {
					t.Errorf("recipients left (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestMigrationDropsOrphanRecipients: migration 0011 deletes the recipients
// an earlier prune left without their event, keeps every other, and drops
// the index of recipients by time (both databases).
func TestMigrationDropsOrphanRecipients(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			s := openAgain(t, opts)
			db := storetest.SQL(t, opts)
			p := mustDevice(t, s, "hostA", "phone")
			recordEvent(t, s, "kept", 1000, p)
			for _, q := range []string{
				`INSERT INTO push_event_recipients (event_id, registration_id, created_at) VALUES ('gone', 'r', 1)`,
				`CREATE INDEX push_event_recipients_created ON push_event_recipients (created_at)`,
				`DELETE FROM push_schema_migrations WHERE version = 11`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			openAgain(t, opts)
			if diff := cmp.Diff([]string{"kept/" + p}, recipientsOf(t, db)); diff != "" {
				t.Errorf("recipients after the migration (-want +got):\n%s", diff)
			}
			mustNoIndex(t, d, db, "push_event_recipients_created")
		})
	}
}

// TestBatchKeyAtOrdersNewKeys: a key NewBatchID makes sorts at or after
// the text of the time before it was made and before the text of the
// millisecond after it was made, so that the prune's range of keys holds
// every batch made before its cut-off and none after.
func TestBatchKeyAtOrdersNewKeys(t *testing.T) {
	for range 1000 {
		before := time.Now().UnixMilli()
		id := store.NewBatchID()
		after := time.Now().UnixMilli()
		if lo, hi := store.BatchKeyAt(before), store.BatchKeyAt(after+1); id < lo || id >= hi {
			t.Fatalf("key %s made in [%d, %d] is not in [%s, %s)", id, before, after, lo, hi)
		}
	}
	if got, want := store.BatchKeyAt(0x0123456789ab), "01234567-89ab"; got != want {
		t.Errorf("BatchKeyAt(0x0123456789ab) = %q, want %q", got, want)
	}
	if got, want := store.BatchKeyAt(-1), "00000000-0000"; got != want {
		t.Errorf("BatchKeyAt(-1) = %q, want %q", got, want)
	}
}

// TestPruneBatchesByKey: the prune reads finished batches by their key
// (migration 0016) and deletes those finished longer than the retention
// ago, however their key reads: a key of their time, a random one (stored
// before keys of version 7) or one of a clock ahead; it keeps a batch
// finished within the retention whatever its key's time, and a pending one
// however old (both databases). Chunks count every batch deleted.
func TestPruneBatchesByKey(t *testing.T) {
	ctx := context.Background()
	const day = 24 * 3600 * 1000
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC).UnixMilli()
	retention := contract.Retention.Milliseconds()
	keyAt := func(ms int64, tail string) string { return store.BatchKeyAt(ms) + "-7" + tail }
	batches := []struct {
		id         string
		state      string
		finishedAt int64
		pruned     bool
	}{
		{keyAt(now-2*day, "000-8000-000000000001"), "sent", now - 2*day, true},
		{keyAt(now-retention-2, "000-8000-000000000002"), "expired", now - retention - 1, true},
		{"f47ac10b-58cc-4372-a567-0e02b2c3d479", "sent", now - 2*day, true},    // random, after the day
		{"0047ac10-58cc-4372-a567-0e02b2c3d479", "dead", now - 2*day, true},    // random, before the cut-off
		{keyAt(now+3*day, "000-8000-000000000003"), "sent", now - 2*day, true}, // a clock ahead
		{keyAt(now-2*day, "000-8000-000000000004"), "sent", now - retention, false},
		{keyAt(now-2*day, "000-8000-000000000005"), "pending", 0, false},
		{"f47ac10b-58cc-4372-a567-0e02b2c3d480", "sent", now - 1000, false},
		{keyAt(now+3*day, "000-8000-000000000006"), "pending", 0, false},
		{keyAt(now-1000, "000-8000-000000000007"), "sent", now - 500, false},
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			s := openAgain(t, opts)
			db := storetest.SQL(t, opts)
			var want []string
			for _, b := range batches {
				var finished any
				if b.state != "pending" {
					finished = b.finishedAt
				}
				if _, err := db.Exec(`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id,
						kind, payload_json, members, state, due_at, expires_at, created_at, finished_at)
					VALUES ($1, 'hostA', 'phone', 'alert', '{}', 1, $2, 0, $3, 0, $4)`,
					b.id, b.state, now+day, finished); err != nil {
					t.Fatal(err)
				}
				if !b.pruned {
					want = append(want, b.id)
				}
			}
			for i, wantN := range []int64{2, 2, 1, 0} {
				n, err := s.Prune(ctx, now, contract.HostRetention.Milliseconds(), retention, 2)
				if err != nil {
					t.Fatal(err)
				}
				if got := n["push_delivery_batches"]; got != wantN {
					t.Errorf("chunk %d pruned %d batches, want %d", i, got, wantN)
				}
			}
			var got []string
			rows, err := db.Query(`SELECT batch_id FROM push_delivery_batches`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				got = append(got, id)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("batches left (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMigrationSettlesOwedBadges: migration 0017 gives back the badge
// raises that batches ended unsent still hold, as the sweep gave them back
// before (in the registration's epoch only, never below 0, each once),
// leaves a sent batch's and a pending one's, and drops the index of owed
// batches (both databases).
func TestMigrationSettlesOwedBadges(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			s := openAgain(t, opts)
			db := storetest.SQL(t, opts)
			phone, tablet, watch := mustDevice(t, s, "hostA", "phone"), mustDevice(t, s, "hostA", "tablet"),
				mustDevice(t, s, "hostA", "watch")
			for _, q := range []struct {
				query string
				args  []any
			}{
				{`UPDATE push_devices SET badge_count = 10, badge_epoch = 2 WHERE registration_id = $1`, []any{phone}},
				{`UPDATE push_devices SET badge_count = 1, badge_epoch = 0 WHERE registration_id = $1`, []any{tablet}},
				{`UPDATE push_devices SET badge_count = 9, badge_epoch = 1 WHERE registration_id = $1`, []any{watch}},
			} {
				if _, err := db.ExecContext(ctx, q.query, q.args...); err != nil {
					t.Fatal(err)
				}
			}
			batches := []struct {
				id, reg, state string
				raised, epoch  int64
				settled        int64
			}{
				{"owed-1", phone, "expired", 2, 2, -2},
				{"owed-2", phone, "dropped", 3, 2, -3},
				{"sent", phone, "sent", 4, 2, 4},
				{"pending", phone, "pending", 1, 2, 1},
				{"given-back", phone, "expired", -5, 2, -5},
				{"old-epoch", phone, "expired", 6, 1, -6},
				{"past-zero", tablet, "dismissed", 4, 0, -4},
				{"other-epoch", watch, "expired", 7, 0, -7},
			}
			for _, b := range batches {
				if _, err := db.ExecContext(ctx, `INSERT INTO push_delivery_batches (batch_id, host_fingerprint,
						registration_id, kind, payload_json, members, state, due_at, expires_at, created_at,
						finished_at, badge, badge_raised, badge_epoch)
					VALUES ($1, 'hostA', $2, 'alert', '[]', 1, $3, 0, 1, 0, 1, 1, $4, $5)`,
					b.id, b.reg, b.state, b.raised, b.epoch); err != nil {
					t.Fatal(err)
				}
			}
			for _, q := range []string{
				`CREATE INDEX push_delivery_batches_badge_owed ON push_delivery_batches (finished_at)
					WHERE badge_raised > 0 AND state <> 'pending' AND state <> 'sent'`,
				`DELETE FROM push_schema_migrations WHERE version = 17`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			openAgain(t, opts)
			for reg, want := range map[string]int64{phone: 5, tablet: 0, watch: 9} {
				var got int64
				if err := db.QueryRowContext(ctx, `SELECT badge_count FROM push_devices WHERE registration_id = $1`,
					reg).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("registration's count %d after the migration, want %d", got, want)
				}
			}
			for _, b := range batches {
				var got int64
				if err := db.QueryRowContext(ctx, `SELECT badge_raised FROM push_delivery_batches WHERE batch_id = $1`,
					b.id).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != b.settled {
					t.Errorf("batch %s's raise %d after the migration, want %d", b.id, got, b.settled)
				}
			}
			mustNoIndex(t, d, db, "push_delivery_batches_badge_owed")
		})
	}
}

// mustNoIndex fails t when the database of dialect d holds an index name.
func mustNoIndex(t *testing.T, d storetest.Dialect, db *sql.DB, name string) {
	t.Helper()
	q := `SELECT COUNT(*) FROM pg_indexes WHERE indexname = $1`
	if d.Name != "postgres" {
		q = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = $1`
	}
	var n int
	if err := db.QueryRow(q, name).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d indexes %s (%v), want none", n, name, err)
	}
}
