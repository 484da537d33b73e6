package store_test

import (
	"context"
	"fmt"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// startSendCase is one text StartSend may send, and who it is sent for.
type startSendCase struct {
	kind          contract.Kind
	noJoin, lease bool
	token         string
	regs          []string
}

func (c startSendCase) String() string {
	return fmt.Sprintf("%s noJoin=%v lease=%v token=%q regs=%d", c.kind, c.noJoin, c.lease, c.token, len(c.regs))
}

// startSendCases lists every kind, with and without an open batch to read,
// with and without a lease's columns, with no token, the host's and
// another's, to the live registration reg and an unknown one, and to the
// unknown one alone.
func startSendCases(reg string) []startSendCase {
	var cs []startSendCase
	for _, kind := range []contract.Kind{contract.KindAlert, contract.KindDismiss} {
		for _, flags := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, token := range []string{"", "token", "other"} {
				for _, regs := range [][]string{{reg, "unknown"}, {"unknown"}} {
					cs = append(cs, startSendCase{kind: kind, noJoin: flags[0], lease: flags[1], token: token, regs: regs})
				}
			}
		}
	}
	return cs
}

// TestStartSendTexts runs StartSend with every text it may send
// (startSendCases): each records the live registration's recipient alone,
// reads the session on every path, also when it records none, and reads a
// lease's columns only when asked to.
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
			for n, c := range startSendCases(reg) {
				id := fmt.Sprintf("event-%d", n)
				start := store.SendStart{TokenHash: c.token, Add: true, NoJoin: c.noJoin, Lease: c.lease,
					Event: store.NewEvent{ID: id, Host: "hostA", Kind: c.kind, Fingerprint: "fp",
						RegistrationIDs: c.regs, Deadline: 8000, QuotaSince: 0, Quota: 1000}}
				for _, r := range c.regs {
					start.Recipients = append(start.Recipients, store.Recipient{EventID: id, RegistrationID: r,
						Host: "hostA", Fingerprint: "fp", Kind: c.kind, BatchID: "batch-" + id + r,
						Joins: c.kind == contract.KindAlert && !c.noJoin})
				}
				var got store.SendStarted
				mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
					var err error
					got, err = tx.StartSend(ctx, start, 2000)
					return err
				})
				checkStarted(t, c, got, c.regs[0] == reg)
			}
		})
	}
}

// checkStarted checks what StartSend read for c: the session when c's
// token is the host's, the first registration's recipient alone when
// added, with the event's deadline and the device only with a lease.
func checkStarted(t *testing.T, c startSendCase, got store.SendStarted, added bool) {
	t.Helper()
	if found := c.token == "token"; got.SessionFound != found || found && got.SessionExpiresAt != 9000 {
		t.Errorf("%v: session found %v expiring %d, want %v", c, got.SessionFound, got.SessionExpiresAt, found)
	}
	if got.Added[0] != added || len(c.regs) > 1 && got.Added[1] {
		t.Errorf("%v: added %v, want the live registration's alone", c, got.Added)
		return
	}
	if !added {
		return
	}
	if p := got.Pending[0]; p.Deadline != 8000 {
		t.Errorf("%v: deadline %d, want 8000", c, p.Deadline)
	}
	if hasToken := got.Pending[0].Device.Token != ""; hasToken != c.lease {
		t.Errorf("%v: device token read = %v, want %v", c, hasToken, c.lease)
	}
}
