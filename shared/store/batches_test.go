package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

func mustBatch(t *testing.T, s *store.Store, id string) store.Batch {
	t.Helper()
	b, err := s.Batch(context.Background(), id)
	if err != nil {
		t.Fatalf("Batch(%q): %v", id, err)
	}
	return b
}

func TestBatchLifecycle(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			reg := mustDevice(t, s, "hostA", "phone")
			nb := store.NewBatch{Host: "hostA", RegistrationID: reg, Kind: contract.KindAlert,
				Payload: `[1]`, Members: 1, DueAt: 4000, ExpiresAt: 9000}
			var a, b, c string
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				var err error
				if a, err = tx.InsertBatch(ctx, nb, 1000); err != nil {
					return err
				}
				if b, err = tx.InsertBatch(ctx, nb, 1100); err != nil {
					return err
				}
				c, err = tx.InsertBatch(ctx, nb, 1200)
				return err
			})
			want := store.Batch{ID: a, Host: "hostA", RegistrationID: reg, Kind: contract.KindAlert, Payload: `[1]`,
				Members: 1, State: store.BatchPending, DueAt: 4000, ExpiresAt: 9000, ScheduledAt: 1000, CreatedAt: 1000}
			if diff := cmp.Diff(want, mustBatch(t, s, a)); diff != "" {
				t.Errorf("inserted batch (-want +got):\n%s", diff)
			}

			var cancellable []store.BatchPayload
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				if err := tx.JoinBatch(ctx, a, `[1,2]`, 2, 8000); err != nil {
					return err
				}
				if err := tx.JoinBatch(ctx, a, `[1,2,3]`, 3, 8500); err != nil {
					return err
				}
				if err := tx.MakeDue(ctx, a, 2000); err != nil {
					return err
				}
				if err := tx.SetBatchMembers(ctx, b, `[7]`, 1); err != nil {
					return err
				}
				if err := tx.DismissBatch(ctx, c, 2100); err != nil {
					return err
				}
				var err error
				cancellable, err = tx.CancellableBatches(ctx, "hostA", reg, 2200)
				return err
			})
			want.Payload, want.Members, want.ExpiresAt, want.DueAt, want.ScheduledAt = `[1,2,3]`, 3, 8000, 2000, 2000
			if diff := cmp.Diff(want, mustBatch(t, s, a)); diff != "" {
				t.Errorf("joined and due batch (-want +got):\n%s", diff)
			}
			if got := mustBatch(t, s, b); got.Payload != `[7]` || got.Members != 1 || got.State != store.BatchPending {
				t.Errorf("after SetBatchMembers: %+v", got)
			}
			if got := mustBatch(t, s, c); got.Payload != store.EmptyPayload || got.Members != 0 || got.State != store.BatchDismissed {
				t.Errorf("after DismissBatch: %+v", got)
			}
			wantCancel := []store.BatchPayload{{ID: a, Payload: `[1,2,3]`}, {ID: b, Payload: `[7]`}}
			if diff := cmp.Diff(wantCancel, cancellable); diff != "" {
				t.Errorf("CancellableBatches (-want +got):\n%s", diff)
			}
			if _, err := s.Batch(ctx, "missing"); !errors.Is(err, store.ErrNoRow) {
				t.Errorf("Batch(missing) = %v, want ErrNoRow", err)
			}
		})
	}
}

// TestNewBatchIDGrows: ids made one after another, even within a
// millisecond, compare in the order they were made.
func TestNewBatchIDGrows(t *testing.T) {
	prev := store.NewBatchID()
	for range 1000 {
		id := store.NewBatchID()
		if id <= prev {
			t.Fatalf("%q made after %q does not follow it", id, prev)
		}
		prev = id
	}
}
