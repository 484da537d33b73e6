package store_test

import (
	"context"
	"testing"

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
			n, err := s.ExpireOverdue(ctx, now, 10)
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
