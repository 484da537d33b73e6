package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

func TestAddRecipient(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			reg := mustDevice(t, s, "hostA", "phone")
			dead := mustDeadDevice(t, s, "hostA", "old-phone")
			var open string
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				var err error
				b := store.NewBatch{Host: "hostA", RegistrationID: reg, Kind: contract.KindAlert,
					Payload: `[{"a":1}]`, Members: 1, DueAt: 1000, ExpiresAt: 5000}
				if _, err = tx.InsertBatch(ctx, b, 500); err != nil {
					return err
				}
				b.DueAt, b.Payload, b.Members = 4000, `[{"b":1},{"c":2}]`, 2
				if open, err = tx.InsertBatch(ctx, b, 600); err != nil {
					return err
				}
				if _, err = tx.RaiseFence(ctx, "hostA", store.Fence{Epoch: "ep", NotificationID: "n1", Seq: 5}, 700); err != nil {
					return err
				}
				for _, id := range []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e10"} {
					err := tx.InsertEvent(ctx, store.NewEvent{ID: id, Host: "hostA", Kind: contract.KindAlert,
						Fingerprint: "fp-" + id, RegistrationIDs: []string{reg}, Deadline: 9000, Quota: 100}, 800)
					if err != nil {
						return err
					}
				}
				return nil
			})
			openBatch := store.OpenBatch{ID: open, Payload: `[{"b":1},{"c":2}]`, Members: 2, DueAt: 4000, ExpiresAt: 5000}
			tests := []struct {
				name    string
				r       store.Recipient
				now     int64
				added   bool
				pending store.Pending
			}{
				{"alert", store.Recipient{EventID: "e1", Kind: contract.KindAlert, Joins: true}, 1000, true,
					store.Pending{Open: openBatch}},
				{"repeat", store.Recipient{EventID: "e1", Kind: contract.KindAlert}, 1000, false, store.Pending{}},
				{"open batch due now is closed", store.Recipient{EventID: "e2", Kind: contract.KindAlert, Joins: true}, 4000, true,
					store.Pending{}},
				{"fenced at the fence's sequence", store.Recipient{EventID: "e3", Kind: contract.KindAlert,
					Fence: &store.Fence{Epoch: "ep", NotificationID: "n1", Seq: 5}}, 1000, false, store.Pending{}},
				{"after the fence", store.Recipient{EventID: "e4", Kind: contract.KindAlert,
					Fence: &store.Fence{Epoch: "ep", NotificationID: "n1", Seq: 6}, Joins: true}, 1000, true,
					store.Pending{Open: openBatch}},
				{"other epoch", store.Recipient{EventID: "e5", Kind: contract.KindAlert,
					Fence: &store.Fence{Epoch: "ep2", NotificationID: "n1", Seq: 1}, Joins: true}, 1000, true,
					store.Pending{Open: openBatch}},
				{"an alert that joins none reads no open batch", store.Recipient{EventID: "e10", Kind: contract.KindAlert},
					1000, true, store.Pending{}},
				{"dismissal counts cancellable batches", store.Recipient{EventID: "e6", Kind: contract.KindDismiss},
					1000, true, store.Pending{Cancellable: 2}},
				{"dead registration", store.Recipient{EventID: "e7", RegistrationID: dead, Kind: contract.KindAlert},
					1000, false, store.Pending{}},
				{"another host", store.Recipient{EventID: "e8", Host: "hostB", Kind: contract.KindAlert},
					1000, false, store.Pending{}},
				{"no such event", store.Recipient{EventID: "e9", Kind: contract.KindAlert}, 1000, false, store.Pending{}},
				{"other content", store.Recipient{EventID: "e8", Fingerprint: "fp-other", Kind: contract.KindAlert},
					1000, false, store.Pending{}},
				{"expired event", store.Recipient{EventID: "e8", Kind: contract.KindAlert}, 9000, false, store.Pending{}},
			}
			for _, tt := range tests {
				if tt.r.RegistrationID == "" {
					tt.r.RegistrationID = reg
				}
				if tt.r.Host == "" {
					tt.r.Host = "hostA"
				}
				if tt.r.Fingerprint == "" {
					tt.r.Fingerprint = "fp-" + tt.r.EventID
				}
				if tt.added {
					tt.pending.Deadline = 9000
					// The recipient reads the registration a delivery
					// leased at admission sends to.
					dev, err := s.Device(ctx, reg)
					if err != nil {
						t.Fatal(err)
					}
					dev.DeviceID = ""
					tt.pending.Device = dev
				}
				var added bool
				var p store.Pending
				mustHostTx(t, s, tt.r.Host, func(tx *store.Tx) error {
					var err error
					added, p, err = tx.AddRecipient(ctx, tt.r, tt.now)
					return err
				})
				if added != tt.added {
					t.Errorf("%s: AddRecipient added = %v, want %v", tt.name, added, tt.added)
				}
				if diff := cmp.Diff(tt.pending, p); diff != "" {
					t.Errorf("%s: AddRecipient pending (-want +got):\n%s", tt.name, diff)
				}
			}
		})
	}
}

func TestRaiseFenceKeepsTheMaximum(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			for _, tt := range []struct{ seq, want int64 }{{5, 5}, {3, 5}, {9, 9}, {9, 9}} {
				var got int64
				mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
					var err error
					got, err = tx.RaiseFence(ctx, "hostA", store.Fence{Epoch: "ep", NotificationID: "n", Seq: tt.seq}, 1)
					return err
				})
				if got != tt.want {
					t.Errorf("RaiseFence(seq %d) = %d, want %d", tt.seq, got, tt.want)
				}
			}
		})
	}
}
