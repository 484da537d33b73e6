package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestTxFailureLeavesNothing fails transactions in every way the pipelined
// runner sends statements (a later write failing at the next statement or
// at the commit, fn failing after reads and queued writes or after writes
// the server ran, a panic) and checks
// that none of their rows stay and that the one pooled connection serves
// the next transaction.
func TestTxFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	errBoom := errors.New("boom")
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s, _ := openOneConnection(t, d)
			// tok0 is taken: a second session with that hash violates the key.
			if err := s.HostTx(ctx, "hostZ", func(tx *store.Tx) error {
				return tx.ReplaceSession(ctx, "hostZ", "tok0", 9000, 1)
			}); err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				name    string
				fn      func(tx *store.Tx) error
				wantErr string // a substring of the error
			}{
				{"fn fails after a read and later writes", func(tx *store.Tx) error {
					if _, err := tx.Challenge(ctx, "none"); !errors.Is(err, store.ErrNoRow) {
						return err
					}
					if err := tx.TouchHost(ctx, "hostA", "key", 1); err != nil {
						return err
					}
					if err := tx.ReplaceSession(ctx, "hostA", "tok1", 9000, 1); err != nil {
						return err
					}
					return errBoom
				}, "boom"},
				{"fn fails after its writes reached the server", func(tx *store.Tx) error {
					// On PostgreSQL the write travels with the read, in a
					// transaction no COMMIT or Sync ended yet: the rollback
					// must undo it.
					if err := tx.TouchHost(ctx, "hostA", "key", 1); err != nil {
						return err
					}
					if _, err := tx.Challenge(ctx, "none"); !errors.Is(err, store.ErrNoRow) {
						return err
					}
					return errBoom
				}, "boom"},
				{"later write fails at commit", func(tx *store.Tx) error {
					if err := tx.TouchHost(ctx, "hostA", "key", 1); err != nil {
						return err
					}
					return tx.ReplaceSession(ctx, "hostA", "tok0", 9000, 1)
				}, "insert session"},
				{"later write fails at the next statement", func(tx *store.Tx) error {
					if err := tx.ReplaceSession(ctx, "hostA", "tok0", 9000, 1); err != nil {
						return err
					}
					_, err := tx.Challenge(ctx, "none")
					return err
				}, "insert session"},
				{"later write fails at a final statement", func(tx *store.Tx) error {
					if err := tx.ReplaceSession(ctx, "hostA", "tok0", 9000, 1); err != nil {
						return err
					}
					_, err := tx.LeaseBatch(ctx, "none", "lease", 1)
					return err
				}, "insert session"},
			}
			before := mustCounts(t, s)
			for _, tt := range tests {
				err := s.HostTx(ctx, "hostA", tt.fn)
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: HostTx = %v, want an error with %q", tt.name, err, tt.wantErr)
				}
				mustSameCounts(t, s, before, tt.name)
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Error("HostTx swallowed a panic")
					}
				}()
				s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
					if err := tx.TouchHost(ctx, "hostA", "key", 1); err != nil {
						return err
					}
					panic("boom")
				})
			}()
			mustSameCounts(t, s, before, "panic")
			// The connection is clean: the next transaction commits.
			if err := s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
				if err := tx.TouchHost(ctx, "hostA", "key", 1); err != nil {
					return err
				}
				return tx.ReplaceSession(ctx, "hostA", "tok1", 9000, 1)
			}); err != nil {
				t.Fatalf("HostTx after failures: %v", err)
			}
			after := mustCounts(t, s)
			if after["push_hosts"] != before["push_hosts"]+1 || after["push_sessions"] != before["push_sessions"]+1 {
				t.Errorf("after a good transaction: %v, want one more host and session than %v", after, before)
			}
		})
	}
}

// TestFinalStatementCommits runs a transaction whose last statement carries
// the commit on PostgreSQL, with a later write queued in front of it: its
// only round trip, so without BEGIN or COMMIT (pipeline).
func TestFinalStatementCommits(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			reg := mustDevice(t, s, "hostA", "phone")
			var attempts int
			var id string
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				var err error
				if id, err = tx.InsertBatch(ctx, dueAlertBatch("hostA", reg), 1); err != nil {
					return err
				}
				attempts, err = tx.LeaseBatch(ctx, id, "lease", 5000)
				return err
			})
			if b := mustBatch(t, s, id); attempts != 1 || b.Attempts != 1 || b.LeaseUntil != 5000 {
				t.Errorf("LeaseBatch = %d; stored attempts %d, lease until %d; want 1, 1, 5000", attempts, b.Attempts, b.LeaseUntil)
			}
		})
	}
}

// TestFailingFinalStatementCommitsNothing: a transaction whose only round
// trip carries its final statement (on PostgreSQL without BEGIN or COMMIT:
// pipeline) keeps none of its writes when that statement fails
// after a later write in the same round trip succeeded, and its connection
// serves the next transaction.
func TestFailingFinalStatementCommitsNothing(t *testing.T) {
	ctx := context.Background()
	// A lease to the token "boom" fails in the database.
	boom := map[string][]string{
		"postgres": {
			`CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$`,
			`CREATE TRIGGER boom BEFORE UPDATE ON push_delivery_batches
				FOR EACH ROW WHEN (NEW.lease_token = 'boom') EXECUTE FUNCTION boom()`,
		},
		"sqlite": {`CREATE TRIGGER boom BEFORE UPDATE ON push_delivery_batches
			WHEN NEW.lease_token = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END`},
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s, opts := openOneConnection(t, d)
			id := mustDueBatch(t, s, "hostA")
			db := storetest.SQL(t, opts)
			for _, q := range boom[d.Name] {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			before := mustCounts(t, s)
			err := s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
				if err := tx.TouchHost(ctx, "hostB", "key", 1); err != nil {
					return err
				}
				_, err := tx.LeaseBatch(ctx, id, "boom", 5000)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "boom") {
				t.Fatalf("HostTx = %v, want the final statement's error", err)
			}
			mustSameCounts(t, s, before, "a failed final statement")
			if b := mustBatch(t, s, id); b.Attempts != 0 || b.LeaseUntil != 0 {
				t.Errorf("the failed lease stayed: attempts %d, lease until %d", b.Attempts, b.LeaseUntil)
			}
			mustHostTx(t, s, "hostA", func(tx *store.Tx) error {
				if err := tx.TouchHost(ctx, "hostB", "key", 1); err != nil {
					return err
				}
				_, err := tx.LeaseBatch(ctx, id, "lease", 5000)
				return err
			})
			if after := mustCounts(t, s); after["push_hosts"] != before["push_hosts"]+1 {
				t.Errorf("after a good transaction: %v, want one more host than %v", after, before)
			}
			if b := mustBatch(t, s, id); b.Attempts != 1 || b.LeaseUntil != 5000 {
				t.Errorf("the good lease: attempts %d, lease until %d; want 1, 5000", b.Attempts, b.LeaseUntil)
			}
		})
	}
}

// TestClaimTakesTheHostLock holds a host's lock in HostTx and checks that a
// claim of a batch of that host, which finds its host inside the statement
// that takes the lock, waits for it.
func TestClaimTakesTheHostLock(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			id := mustDueBatch(t, s, "hostA")
			var mu sync.Mutex
			var order []string
			log := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
			held, release := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				err := s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
					// The first statement takes the lock.
					if _, err := tx.Challenge(ctx, "none"); !errors.Is(err, store.ErrNoRow) {
						return err
					}
					log("host in")
					close(held)
					<-release
					log("host out")
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
			<-held
			go func() {
				defer wg.Done()
				c, err := s.ClaimBatch(ctx, id, "lease", 10, 30_010, "deadline")
				if err != nil || !c.Leased {
					t.Errorf("ClaimBatch = %+v, %v; want leased", c, err)
				}
				log("batch in")
			}()
			// Were the lock not taken, the claim would get in meanwhile.
			time.Sleep(100 * time.Millisecond)
			close(release)
			wg.Wait()
			if want := []string{"host in", "host out", "batch in"}; !slices.Equal(order, want) {
				t.Errorf("order = %q, want %q", order, want)
			}
		})
	}
}

// dueAlertBatch is a one-alert batch of host's registration reg, due at 1.
func dueAlertBatch(host, reg string) store.NewBatch {
	return store.NewBatch{Host: host, RegistrationID: reg, Kind: contract.KindAlert, Payload: "[]",
		Members: 1, DueAt: 1, ExpiresAt: 9000}
}

func mustCounts(t *testing.T, s *store.Store) map[string]int64 {
	t.Helper()
	c, err := s.RowCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustSameCounts(t *testing.T, s *store.Store, want map[string]int64, what string) {
	t.Helper()
	got := mustCounts(t, s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s has %d rows, want %d", what, k, got[k], v)
		}
	}
}

// openOneConnection opens a store of d whose every transaction reuses one
// connection, and returns it with its options.
func openOneConnection(t *testing.T, d storetest.Dialect) (*store.Store, store.Options) {
	t.Helper()
	opts := d.Options(t)
	opts.PoolMax = 1
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, opts
}

// mustDueBatch records a registration of host and a due alert batch to it,
// and returns the batch's id.
func mustDueBatch(t *testing.T, s *store.Store, host string) string {
	t.Helper()
	reg := mustDevice(t, s, host, "phone")
	var id string
	mustHostTx(t, s, host, func(tx *store.Tx) error {
		var err error
		id, err = tx.InsertBatch(context.Background(), dueAlertBatch(host, reg), 1)
		return err
	})
	return id
}

// TestTransactionsSendNoBeginOrCommit: on PostgreSQL a transaction of two
// round trips sends neither BEGIN nor COMMIT (the protocol's transaction
// spans its round trips, the first ended by a Flush, the last by the Sync
// that commits, pipeline), takes two round trips, and commits.
func TestTransactionsSendNoBeginOrCommit(t *testing.T) {
	ctx := context.Background()
	s, _, rt := storetest.OpenCounting(t)
	tx := func(token string) {
		t.Helper()
		if err := s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
			if _, err := tx.Challenge(ctx, "none"); !errors.Is(err, store.ErrNoRow) {
				return err
			}
			if err := tx.TouchHost(ctx, "hostA", "key", 1); err != nil {
				return err
			}
			return tx.ReplaceSession(ctx, "hostA", token, 9000, 1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	tx("tok1") // the connection prepares its statements
	before := rt.Load()
	tx("tok2")
	if n := rt.Load() - before; n != 2 {
		t.Errorf("%d round trips, want 2 (the read with the lock, the writes with the commit)", n)
	}
	for _, q := range rt.Statements() {
		if q := strings.ToUpper(strings.TrimSpace(q)); q == "BEGIN" || q == "COMMIT" {
			t.Errorf("statement %q sent", q)
		}
	}
	if n := mustCounts(t, s); n["push_hosts"] != 1 || n["push_sessions"] != 1 {
		t.Errorf("rows %v, want a host and its session", n)
	}
}

// TestSilentTransactionIsCutOff: a transaction whose client goes silent
// between two round trips (on PostgreSQL its server waits for the next
// message, with no idle timer: pipeline) holds its host's lock until
// CutOffSilent ends its session; then the host's next transaction runs, and
// the silent one commits nothing. A session silent for less is left alone.
func TestSilentTransactionIsCutOff(t *testing.T) {
	ctx := context.Background()
	opts := storetest.Postgres(t).Options(t)
	s := openAgain(t, opts)
	held, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(resume) }) }
	t.Cleanup(release) // before the store closes, which waits for its connection
	silent := make(chan error, 1)
	go func() {
		silent <- s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
			if _, err := tx.Challenge(ctx, "none"); !errors.Is(err, store.ErrNoRow) {
				return err
			}
			close(held)
			<-resume // silent, its transaction open and the host's lock held
			if err := tx.TouchHost(ctx, "hostA", "silent", 1); err != nil {
				return err
			}
			return tx.ReplaceSession(ctx, "hostA", "tok-silent", 9000, 1)
		})
	}()
	<-held
	touch := func(key string) error {
		return s.HostTx(ctx, "hostA", func(tx *store.Tx) error { return tx.TouchHost(ctx, "hostA", key, 2) })
	}
	if err := touch("waiting"); err == nil {
		t.Fatal("a transaction of the host ran while the silent one held its lock")
	}
	if n, err := s.CutOffSilentAfter(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("CutOffSilent(an hour) = %d, %v; want 0", n, err)
	}
	// The server's clock decides how long the session has been silent:
	// ask until it has been for a millisecond.
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, err := s.CutOffSilentAfter(ctx, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if n != 0 || time.Now().After(deadline) {
			t.Fatalf("CutOffSilent = %d, want the silent session", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := touch("after"); err != nil {
		t.Fatalf("the host's next transaction: %v", err)
	}
	release()
	if err := <-silent; err == nil {
		t.Error("the silent transaction committed after its session was ended")
	}
	var key string
	if err := storetest.SQL(t, opts).QueryRow(
		`SELECT host_public_key FROM push_hosts WHERE host_fingerprint = 'hostA'`).Scan(&key); err != nil || key != "after" {
		t.Errorf("host key %q (%v), want the next transaction's", key, err)
	}
}
