package store_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// holderFixture is a PostgreSQL store with a registration whose batch
// (holder) is in flight, leased to "holder" until fixtureNow+30 s, and a
// connection of the test's own to the same database.
type holderFixture struct {
	s           *store.Store
	db          *sql.DB
	reg, holder string
}

func mustHolderFixture(t *testing.T) *holderFixture {
	t.Helper()
	ctx := context.Background()
	opts := storetest.Postgres(t).Options(t)
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &holderFixture{s: s, db: storetest.SQL(t, opts), reg: mustDevice(t, s, "hostA", "phone")}
	f.holder = f.insert(t, store.NewBatch{DueAt: 5000})
	err = s.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.LeaseBatch(ctx, f.holder, "holder", fixtureNow+30_000)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// insert stores b, an alert batch of the fixture's registration expiring
// at 60 s, and returns its id.
func (f *holderFixture) insert(t *testing.T, b store.NewBatch) string {
	t.Helper()
	b.Host, b.RegistrationID, b.Kind, b.Payload, b.Members, b.ExpiresAt = "hostA", f.reg, contract.KindAlert, `[1]`, 1, 60_000
	var id string
	mustHostTx(t, f.s, "hostA", func(tx *store.Tx) error {
		var err error
		id, err = tx.InsertBatch(context.Background(), b, 1000)
		return err
	})
	return id
}

// block takes the holder's row lock in a transaction of the test's own,
// so that the statements that update the row queue behind it in the order
// they reach it; each call of the returned wait waits for one more of them
// to queue. release commits the transaction, which changes nothing.
func (f *holderFixture) block(t *testing.T) (wait, release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := f.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	var blocker int64
	if err := tx.QueryRow(`SELECT pg_backend_pid() FROM push_delivery_batches WHERE batch_id = $1 FOR UPDATE`, f.holder).
		Scan(&blocker); err != nil {
		t.Fatal(err)
	}
	queued := []int64{blocker}
	wait = func() {
		t.Helper()
		storetest.WaitFor(t, func() bool {
			// The first waiter waits for the blocker, each later one for
			// the one before it, which holds the row's tuple lock.
			var pid int64
			err := f.db.QueryRow(`SELECT pid FROM pg_stat_activity
				WHERE pg_blocking_pids(pid) && CAST($1 AS INT[]) AND NOT pid = ANY(CAST($1 AS INT[]))`,
				queued).Scan(&pid)
			if err != nil {
				return false
			}
			queued = append(queued, pid)
			return true
		})
	}
	return wait, func() {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// end ends the holder as sent, in a goroutine; the channel gets what
// EndLeasedBatch returned.
func (f *holderFixture) end() <-chan ended {
	c := make(chan ended, 1)
	go func() {
		var e ended
		e.ended, e.woken, e.err = f.s.EndLeasedBatch(context.Background(), f.holder, "hostA", f.reg, "holder",
			store.BatchSent, "", fixtureNow, store.ReadHeldBack)
		c <- e
	}()
	return c
}

// race runs the holder's end and start, which starts another operation
// on the holder's row in a goroutine, queued behind the row's lock in the
// order endFirst says, then lets them go and returns what the end
// returned.
func (f *holderFixture) race(t *testing.T, endFirst bool, start func()) ended {
	t.Helper()
	wait, release := f.block(t)
	var e <-chan ended
	if endFirst {
		e = f.end()
		wait()
		start()
	} else {
		start()
		wait()
		e = f.end()
	}
	wait()
	release()
	return <-e
}

// ended is what EndLeasedBatch returned.
type ended struct {
	ended bool
	woken []string
	err   error
}

// TestEndMeetsClaimAtTheHolder: on PostgreSQL a batch's end takes no host
// lock and reads no other batch unless a hold-back marked its row
// (store.EndLeasedBatch): the row orders the end and a sibling's claim.
// Each order is forced by a transaction that holds the row while both
// statements queue behind it. When the end's update comes first, the
// claim's mark rechecks the ended row and the claim takes the lease
// itself; when the claim's mark comes first, the end finds the mark and
// hands on to the sibling, which the claim held back. Either way the
// sibling is never left held back behind a lease that has ended.
func TestEndMeetsClaimAtTheHolder(t *testing.T) {
	ctx := context.Background()
	for _, endFirst := range []bool{true, false} {
		name := "claim first"
		if endFirst {
			name = "end first"
		}
		t.Run(name, func(t *testing.T) {
			f := mustHolderFixture(t)
			sibling := f.insert(t, store.NewBatch{DueAt: fixtureNow})
			claimed := make(chan store.Claim, 1)
			claim := func() {
				go func() {
					c, err := f.s.ClaimBatch(ctx, sibling, "sibling", fixtureNow, fixtureNow+30_000, "deadline")
					if err != nil {
						t.Error(err)
					}
					claimed <- c
				}()
			}
			got := f.race(t, endFirst, claim)
			c := <-claimed
			if got.err != nil || !got.ended {
				t.Fatalf("EndLeasedBatch = %v, %v", got.ended, got.err)
			}
			if endFirst {
				if !c.Leased || len(got.woken) != 0 {
					t.Fatalf("end first: claim leased %v, end woke %v; want the claim to lease and the end to wake nothing",
						c.Leased, got.woken)
				}
				return
			}
			if c.Leased || c.HeldUntil != fixtureNow+30_000 {
				t.Fatalf("claim first: claim = %+v, want held back until the holder's lease ends", c)
			}
			if diff := cmp.Diff([]string{sibling}, got.woken); diff != "" {
				t.Fatalf("claim first: the end woke (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEndMeetsAdmissionAtTheHolder is TestEndMeetsClaimAtTheHolder for an
// admission that may lease the batch it opens (SendStart.Lease): when the
// end comes first the admission finds nothing in flight and may lease;
// when the admission's mark comes first it finds the holder in flight,
// opens its batch held back in the same transaction, and the end, which
// waits for that transaction, hands on to it.
func TestEndMeetsAdmissionAtTheHolder(t *testing.T) {
	ctx := context.Background()
	for _, endFirst := range []bool{true, false} {
		name := "admission first"
		if endFirst {
			name = "end first"
		}
		t.Run(name, func(t *testing.T) {
			f := mustHolderFixture(t)
			type admitted struct {
				inFlight bool
				batch    string
			}
			admissions := make(chan admitted, 1)
			admit := func() {
				go func() {
					var a admitted
					err := f.s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
						batch := store.NewBatchID()
						start := store.SendStart{Add: true, NoJoin: true, Lease: true,
							Event: store.NewEvent{ID: "event", Host: "hostA", Kind: contract.KindAlert, Fingerprint: "fp",
								RegistrationIDs: []string{f.reg}, Deadline: 60_000, Quota: 300},
							Recipients: []store.Recipient{{EventID: "event", RegistrationID: f.reg, Host: "hostA",
								Fingerprint: "fp", Kind: contract.KindAlert, BatchID: batch}}}
						st, err := tx.StartSend(ctx, start, fixtureNow)
						if err != nil {
							return err
						}
						if len(st.Added) != 1 || !st.Added[0] {
							t.Errorf("StartSend recorded %v, want the recipient", st.Added)
						}
						a.inFlight = st.Pending[0].InFlight
						nb := store.NewBatch{ID: batch, Host: "hostA", RegistrationID: f.reg, Kind: contract.KindAlert,
							Payload: `[1]`, Members: 1, DueAt: fixtureNow, ExpiresAt: 60_000}
						if a.inFlight {
							nb.HeldAt = fixtureNow
						} else {
							nb.LeaseToken, nb.LeaseUntil = "admitted", fixtureNow+30_000
						}
						a.batch, err = tx.InsertBatch(ctx, nb, fixtureNow)
						return err
					})
					if err != nil {
						t.Error(err)
					}
					admissions <- a
				}()
			}
			got := f.race(t, endFirst, admit)
			a := <-admissions
			if got.err != nil || !got.ended {
				t.Fatalf("EndLeasedBatch = %v, %v", got.ended, got.err)
			}
			if endFirst {
				if a.inFlight || len(got.woken) != 0 {
					t.Fatalf("end first: admission found a batch in flight %v, end woke %v; want neither",
						a.inFlight, got.woken)
				}
				return
			}
			if !a.inFlight {
				t.Fatal("admission first: the admission found nothing in flight, want the holder")
			}
			if diff := cmp.Diff([]string{a.batch}, got.woken); diff != "" {
				t.Fatalf("admission first: the end woke (-want +got):\n%s", diff)
			}
		})
	}
}
