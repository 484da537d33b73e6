package store_test

import (
	"context"
	"fmt"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestStartSendTexts runs StartSend with every text it may send (each kind,
// with and without an open batch to read, with and without a lease's
// columns, with and without a session to read), to one live registration
// and one unknown: each records the live one's recipient alone, reads the
// session on every path, also when it records none, and reads a lease's
// columns only when asked to.
func TestStartSendTexts(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			reg := mustDevice(t, s, "hostA", "phone")
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				if err := tx.TouchHost(ctx, "hostA", "key", 1000); err != nil {
					return err
				}
				return tx.ReplaceSession(ctx, "hostA", "token", 9000, 1000)
			})
			n := 0
			for _, kind := range []contract.Kind{contract.KindAlert, contract.KindDismiss} {
				for _, noJoin := range []bool{false, true} {
					for _, lease := range []bool{false, true} {
						for _, token := range []string{"", "token", "other"} {
							for _, regs := range [][]string{{reg, "unknown"}, {"unknown"}} {
								n++
								name := fmt.Sprintf("%s noJoin=%v lease=%v token=%q regs=%d", kind, noJoin, lease, token, len(regs))
								id := fmt.Sprintf("event-%d", n)
								start := store.SendStart{TokenHash: token, Add: true, NoJoin: noJoin, Lease: lease,
									Event: store.NewEvent{ID: id, Host: "hostA", Kind: kind, Fingerprint: "fp",
										RegistrationIDs: regs, Deadline: 8000, QuotaSince: 0, Quota: 1000}}
								for _, r := range regs {
									start.Recipients = append(start.Recipients, store.Recipient{EventID: id, RegistrationID: r,
										Host: "hostA", Fingerprint: "fp", Kind: kind, BatchID: "batch-" + id + r,
										Joins: kind == contract.KindAlert && !noJoin})
								}
								var got store.SendStarted
								mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
									var err error
									got, err = tx.StartSend(ctx, start, 2000)
									return err
								})
								if found := token == "token"; got.SessionFound != found || found && got.SessionExpiresAt != 9000 {
									t.Errorf("%s: session found %v expiring %d, want %v", name, got.SessionFound, got.SessionExpiresAt, found)
								}
								wantAdded := regs[0] == reg
								if got.Added[0] != wantAdded || len(regs) > 1 && got.Added[1] {
									t.Errorf("%s: added %v, want the live registration's alone", name, got.Added)
									continue
								}
								if !wantAdded {
									continue
								}
								p := got.Pending[0]
								if p.Deadline != 8000 {
									t.Errorf("%s: deadline %d, want 8000", name, p.Deadline)
								}
								if hasToken := p.Device.Token != ""; hasToken != lease {
									t.Errorf("%s: device token read = %v, want %v", name, hasToken, lease)
								}
							}
						}
					}
				}
			}
		})
	}
}
