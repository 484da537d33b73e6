package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// mustDevice registers an Android device of host and returns its id.
func mustDevice(t *testing.T, s *store.Store, host, device string) string {
	t.Helper()
	id, err := register(t, s, host, device)
	if err != nil {
		t.Fatalf("register %s/%s: %v", host, device, err)
	}
	return id
}

// mustDeadDevice registers a device of host and marks it dead.
func mustDeadDevice(t *testing.T, s *store.Store, host, device string) string {
	t.Helper()
	id := mustDevice(t, s, host, device)
	d, err := s.Device(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.MarkDeviceDead(context.Background(), d, 2000); err != nil || !ok {
		t.Fatalf("MarkDeviceDead = %v, %v", ok, err)
	}
	return id
}

// mustHostTx runs fn under the host lock and fails the test on an error.
func mustHostTx(t *testing.T, s *store.Store, host string, fn func(tx *store.Tx) error) {
	t.Helper()
	if err := s.HostTx(context.Background(), host, fn); err != nil {
		t.Fatalf("HostTx: %v", err)
	}
}

func TestInsertEvent(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			reg := mustDevice(t, s, "hostA", "phone")
			dead := mustDeadDevice(t, s, "hostA", "old-phone")
			other := mustDevice(t, s, "hostB", "phone")
			ev := func(id string, reg string, kind contract.Kind) store.NewEvent {
				return store.NewEvent{ID: id, Host: "hostA", Kind: kind, Fingerprint: "fp-" + id,
					RegistrationIDs: []string{reg}, Deadline: 9000, QuotaSince: 1000, Quota: 2}
			}
			dup := ev("e1", reg, contract.KindAlert)
			dup.Fingerprint, dup.Deadline = "fp-other", 9999
			tests := []struct {
				name string
				e    store.NewEvent
				now  int64
				chk  store.EventCheck
			}{
				{"first", ev("e1", reg, contract.KindAlert), 1000,
					store.EventCheck{Device: store.DeviceAlive, Found: true, Fingerprint: "fp-e1", ExpiresAt: 9000}},
				{"duplicate keeps the stored event", dup, 1500,
					store.EventCheck{Device: store.DeviceAlive, Found: true, Fingerprint: "fp-e1", ExpiresAt: 9000}},
				{"second", ev("e2", reg, contract.KindAlert), 1001,
					store.EventCheck{Device: store.DeviceAlive, Found: true, Fingerprint: "fp-e2", ExpiresAt: 9000}},
				// created_at 1000 is not after QuotaSince 1000: e1 no longer counts.
				{"quota window is strict", ev("e3", reg, contract.KindAlert), 1002,
					store.EventCheck{Device: store.DeviceAlive, Found: true, Fingerprint: "fp-e3", ExpiresAt: 9000}},
				{"over quota", ev("e4", reg, contract.KindAlert), 1003,
					store.EventCheck{Device: store.DeviceAlive}},
				{"other kind has its own quota", ev("e5", reg, contract.KindDismiss), 1003,
					store.EventCheck{Device: store.DeviceAlive, Found: true, Fingerprint: "fp-e5", ExpiresAt: 9000}},
				{"dead registration", ev("e6", dead, contract.KindDismiss), 1003,
					store.EventCheck{Device: store.DeviceDead}},
				{"another host's registration", ev("e7", other, contract.KindDismiss), 1003,
					store.EventCheck{Device: store.DeviceUnknown}},
				{"unknown registration", ev("e8", "nope", contract.KindDismiss), 1003,
					store.EventCheck{Device: store.DeviceUnknown}},
				// Recorded when any one of the registrations is live.
				{"dead, then live", func() store.NewEvent {
					e := ev("e9", dead, contract.KindDismiss)
					e.RegistrationIDs = append(e.RegistrationIDs, "nope", reg)
					return e
				}(), 1003, store.EventCheck{Device: store.DeviceDead, Found: true, Fingerprint: "fp-e9", ExpiresAt: 9000}},
			}
			for _, tt := range tests {
				var chk store.EventCheck
				mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
					if err := tx.InsertEvent(ctx, tt.e, tt.now); err != nil {
						return err
					}
					var err error
					chk, err = tx.CheckEvent(ctx, "hostA", tt.e.RegistrationIDs[0], tt.e.ID)
					return err
				})
				if diff := cmp.Diff(tt.chk, chk); diff != "" {
					t.Errorf("%s: CheckEvent (-want +got):\n%s", tt.name, diff)
				}
			}
		})
	}
}
