package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestClaimBatch holds both dialects' claims (one statement on PostgreSQL,
// a few in a transaction on SQLite) to the same rules: what is leased, what
// expires, what is held back and until when, and what the claim reads.
func TestClaimBatch(t *testing.T) {
	ctx := context.Background()
	const now = fixtureNow
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			f := mustLeaseFixture(t, d)
			claim := func(id string) store.Claim {
				t.Helper()
				c, err := f.s.ClaimBatch(ctx, id, "new-lease", now, now+30_000, "deadline")
				if err != nil {
					t.Fatalf("ClaimBatch: %v", err)
				}
				return c
			}
			type outcome struct {
				Found, Leased, Expired bool
				HeldUntil              int64
			}
			got := func(c store.Claim) outcome {
				return outcome{c.Batch.ID != "", c.Leased, c.Expired, c.HeldUntil}
			}
			tests := []struct {
				name string
				id   string
				want outcome
			}{
				{"no such batch", "00000000-0000-0000-0000-000000000000", outcome{}},
				{"in flight itself", f.held, outcome{Found: true, HeldUntil: now + 30_000}},
				{"another batch of the registration is in flight", f.due, outcome{Found: true, HeldUntil: now + 30_000}},
				{"early", f.later, outcome{Found: true}},
				{"past its deadline", f.expired, outcome{Found: true, Expired: true}},
				{"due, nothing in flight", f.other, outcome{Found: true, Leased: true}},
				{"finished", f.expired, outcome{Found: true}},
			}
			for _, tt := range tests {
				c := claim(tt.id)
				if diff := cmp.Diff(tt.want, got(c)); diff != "" {
					t.Errorf("%s: claim (-want +got):\n%s", tt.name, diff)
				}
			}
			if b := mustBatch(t, f.s, f.expired); b.State != store.BatchExpired || b.Payload != store.EmptyPayload {
				t.Errorf("expired batch = %+v, want expired with its payload cleared", b)
			}
			b := mustBatch(t, f.s, f.other)
			if b.LeaseToken != "new-lease" || b.LeaseUntil != now+30_000 || b.Attempts != 1 {
				t.Errorf("leased batch = %+v, want lease new-lease until +30 s, 1 attempt", b)
			}
			// Held back: nothing changed.
			if b := mustBatch(t, f.s, f.due); b.LeaseToken != "" || b.Attempts != 0 {
				t.Errorf("held-back batch = %+v, want untouched", b)
			}
		})
	}
}

// TestClaimBatchReads: a leased claim returns the batch, the registration
// (or none once deleted) and exactly the host's fences of its members' ids.
func TestClaimBatchReads(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			reg := mustDevice(t, s, "hostA", "phone")
			payload := `[{"notificationId":"a","notificationSeq":1,"notificationEpoch":"e1"},` +
				`{"notificationSeq":2,"notificationEpoch":"e1"},{"notificationId":"b","notificationSeq":3,"notificationEpoch":"e2"}]`
			var id, gone string
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				for _, f := range []store.Fence{{Epoch: "e1", NotificationID: "a", Seq: 5},
					{Epoch: "e9", NotificationID: "b", Seq: 7}, {Epoch: "e1", NotificationID: "zz", Seq: 1}} {
					if _, err := tx.RaiseFence(ctx, "hostA", f, 1000); err != nil {
						return err
					}
				}
				var err error
				nb := store.NewBatch{Host: "hostA", RegistrationID: reg, Kind: contract.KindAlert, Payload: payload,
					Members: 3, DueAt: 5000, ExpiresAt: 60_000}
				if id, err = tx.InsertBatch(ctx, nb, 1000); err != nil {
					return err
				}
				nb.RegistrationID = "deleted-registration"
				gone, err = tx.InsertBatch(ctx, nb, 1000)
				return err
			})
			// Another host's fence of the same id is not read.
			mustHostTx(t, s, "hostB", func(tx *store.Tx) error {
				_, err := tx.RaiseFence(ctx, "hostB", store.Fence{Epoch: "e1", NotificationID: "a", Seq: 9}, 1000)
				return err
			})
			c, err := s.ClaimBatch(ctx, id, "lease", fixtureNow, fixtureNow+30_000, "deadline")
			if err != nil || !c.Leased || c.Attempts != 1 {
				t.Fatalf("ClaimBatch = %+v, %v; want leased", c, err)
			}
			want := map[store.FenceKey]int64{{Epoch: "e1", NotificationID: "a"}: 5, {Epoch: "e9", NotificationID: "b"}: 7}
			if diff := cmp.Diff(want, c.Fences); diff != "" {
				t.Errorf("fences (-want +got):\n%s", diff)
			}
			if c.Batch.Payload != payload || c.Batch.Host != "hostA" || c.Device.RegistrationID != reg || c.Device.Dead {
				t.Errorf("claim read batch %+v, device %+v", c.Batch, c.Device)
			}
			c, err = s.ClaimBatch(ctx, gone, "lease2", fixtureNow, fixtureNow+30_000, "deadline")
			if err != nil || !c.Leased || c.Device.RegistrationID != "" {
				t.Errorf("claim of a deleted registration's batch = %+v, %v; want leased with no device", c, err)
			}
		})
	}
}

// TestClaimOneInFlight: claims of a registration's due batches racing each
// other lease exactly one of them, on both databases, round after round.
func TestClaimOneInFlight(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			for round := range 10 {
				reg := mustDevice(t, s, "hostA", fmt.Sprintf("phone%d", round))
				ids := make([]string, 4)
				mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
					for i := range ids {
						var err error
						ids[i], err = tx.InsertBatch(ctx, store.NewBatch{Host: "hostA", RegistrationID: reg,
							Kind: contract.KindAlert, Payload: `[]`, Members: 1, DueAt: 5000, ExpiresAt: 60_000}, 1000)
						if err != nil {
							return err
						}
					}
					return nil
				})
				var wg sync.WaitGroup
				leased := make([]bool, len(ids))
				for i, id := range ids {
					wg.Go(func() {
						c, err := s.ClaimBatch(ctx, id, fmt.Sprint("lease", i), fixtureNow, fixtureNow+30_000, "deadline")
						if err != nil {
							t.Errorf("ClaimBatch: %v", err)
						}
						leased[i] = c.Leased
					})
				}
				wg.Wait()
				n := 0
				for _, l := range leased {
					if l {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("round %d: %d of %d racing claims leased, want 1", round, n, len(ids))
				}
			}
		})
	}
}
