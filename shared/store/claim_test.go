package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// leaseFixture is a registration with a batch in flight (leased to
// "holder") and siblings in every state a wake-up must tell apart.
type leaseFixture struct {
	s   *store.Store
	reg string
	// held is leased to "holder"; due, later, expired and leased are the
	// registration's other batches: due now, due later, past their
	// deadline, and leased by another delivery; other is a due batch of
	// another registration.
	held, due, later, expired, leased, other string
}

// now is the fixture's time in epoch ms.
const fixtureNow = 10_000

func mustLeaseFixture(t *testing.T, d storetest.Dialect) *leaseFixture {
	t.Helper()
	ctx := context.Background()
	f := &leaseFixture{s: storetest.Open(t, d)}
	f.reg = mustDevice(t, f.s, "hostA", "phone")
	otherReg := mustDevice(t, f.s, "hostA", "tablet")
	batch := func(reg string, due, expires int64) store.NewBatch {
		return store.NewBatch{Host: "hostA", RegistrationID: reg, Kind: contract.KindAlert, Payload: `[1]`,
			Members: 1, DueAt: due, ExpiresAt: expires}
	}
	mustHostTx(t, f.s, "hostA", func(tx *store.Tx) error {
		for _, b := range []struct {
			id *string
			nb store.NewBatch
		}{
			{&f.held, batch(f.reg, 5000, 60_000)},
			{&f.due, batch(f.reg, fixtureNow, 60_000)},
			{&f.later, batch(f.reg, fixtureNow+1, 60_000)},
			{&f.expired, batch(f.reg, 5000, fixtureNow)},
			{&f.leased, batch(f.reg, 5000, 60_000)},
			{&f.other, batch(otherReg, 5000, 60_000)},
		} {
			var err error
			if *b.id, err = tx.InsertBatch(ctx, b.nb, 1000); err != nil {
				return err
			}
		}
		return nil
	})
	for id, token := range map[string]string{f.held: "holder", f.leased: "another"} {
		err := f.s.Tx(ctx, func(tx *store.Tx) error {
			_, err := tx.LeaseBatch(ctx, id, token, fixtureNow+30_000)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The due sibling's claim found it held back by the holder's lease.
	if c, err := f.s.ClaimBatch(ctx, f.due, "sibling", fixtureNow, fixtureNow+30_000, "deadline"); err != nil || c.Leased {
		t.Fatalf("due sibling's claim = %+v, %v; want held back", c, err)
	}
	return f
}

// snapshot reads every batch of the fixture.
func (f *leaseFixture) snapshot(t *testing.T) []store.Batch {
	t.Helper()
	var out []store.Batch
	for _, id := range []string{f.held, f.due, f.later, f.expired, f.leased, f.other} {
		out = append(out, mustBatch(t, f.s, id))
	}
	return out
}

// TestEndLeasedBatch: the lease holder ends its batch and wakes exactly the
// registration's siblings that are due, pending, unleased and unexpired and
// whose claim found them held back (a due batch no claim asked for is left
// to its own task); a holder whose lease was taken over (another token)
// changes nothing and wakes nothing. Each way of finding the held-back
// batches (store.HeldBack) wakes the same; only MarkHeldBack marks them
// on PostgreSQL.
func TestEndLeasedBatch(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		for name, held := range map[string]store.HeldBack{"read": store.ReadHeldBack, "mark": store.MarkHeldBack} {
			t.Run(d.Name+"/"+name, func(t *testing.T) {
				t.Run("holder", func(t *testing.T) {
					f := mustLeaseFixture(t, d)
					var unasked string
					mustHostTx(t, f.s, "hostA", func(tx *store.Tx) error {
						var err error
						unasked, err = tx.InsertBatch(ctx, store.NewBatch{Host: "hostA", RegistrationID: f.reg,
							Kind: contract.KindAlert, Payload: `[1]`, Members: 1, DueAt: fixtureNow, ExpiresAt: 60_000}, 1000)
						return err
					})
					ended, woken, err := f.s.EndLeasedBatch(ctx, f.held, "hostA", f.reg, "holder", store.BatchSent, "", fixtureNow, held)
					if err != nil || !ended {
						t.Fatalf("EndLeasedBatch = %v, %v, want ended", ended, err)
					}
					if diff := cmp.Diff([]string{f.due}, woken); diff != "" {
						t.Errorf("woken (-want +got):\n%s", diff)
					}
					b := mustBatch(t, f.s, f.held)
					if b.State != store.BatchSent || b.Payload != store.EmptyPayload || b.LeaseToken != "" || b.LeaseUntil != 0 {
						t.Errorf("ended batch = %+v, want sent, payload cleared, lease gone", b)
					}
					// Marked scheduled at now, but for PostgreSQL's read.
					mark := int64(fixtureNow)
					if d.Name == "postgres" && held == store.ReadHeldBack {
						mark = 1000
					}
					if b := mustBatch(t, f.s, f.due); b.ScheduledAt != mark {
						t.Errorf("woken batch scheduled at %d, want %d", b.ScheduledAt, mark)
					}
					if b := mustBatch(t, f.s, unasked); b.ScheduledAt != 1000 {
						t.Errorf("unasked batch scheduled at %d, want 1000 (untouched)", b.ScheduledAt)
					}
				})
				t.Run("stale holder", func(t *testing.T) {
					f := mustLeaseFixture(t, d)
					before := f.snapshot(t)
					ended, woken, err := f.s.EndLeasedBatch(ctx, f.held, "hostA", f.reg, "stale", store.BatchSent, "", fixtureNow, held)
					if err != nil || ended || len(woken) != 0 {
						t.Fatalf("EndLeasedBatch(stale token) = %v, %v, %v, want nothing ended or woken", ended, woken, err)
					}
					if diff := cmp.Diff(before, f.snapshot(t)); diff != "" {
						t.Errorf("a stale holder changed batches (-before +after):\n%s", diff)
					}
				})
			})
		}
	}
}

// TestRetryBatchNeedsTheLease: only the lease holder puts its batch back for
// a retry; a stale holder's retry changes nothing.
func TestRetryBatchNeedsTheLease(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			f := mustLeaseFixture(t, d)
			before := f.snapshot(t)
			var retried bool
			mustHostTx(t, f.s, "hostA", func(tx *store.Tx) error {
				var err error
				retried, err = tx.RetryBatch(ctx, f.held, "stale", "", fixtureNow+4000, fixtureNow)
				return err
			})
			if retried {
				t.Fatal("RetryBatch(stale token) = true, want false")
			}
			if diff := cmp.Diff(before, f.snapshot(t)); diff != "" {
				t.Errorf("a stale retry changed batches (-before +after):\n%s", diff)
			}
			mustHostTx(t, f.s, "hostA", func(tx *store.Tx) error {
				var err error
				retried, err = tx.RetryBatch(ctx, f.held, "holder", "", fixtureNow+4000, fixtureNow)
				return err
			})
			b := mustBatch(t, f.s, f.held)
			if !retried || b.State != store.BatchPending || b.DueAt != fixtureNow+4000 || b.LeaseToken != "" {
				t.Errorf("RetryBatch(holder) = %v, batch %+v; want pending, due at +4 s, lease gone", retried, b)
			}
			var due []string
			mustHostTx(t, f.s, "hostA", func(tx *store.Tx) error {
				var err error
				due, err = tx.DueBatches(ctx, f.reg, fixtureNow)
				return err
			})
			if !slices.Equal(due, []string{f.due}) {
				t.Errorf("DueBatches = %v, want only %v", due, f.due)
			}
		})
	}
}
