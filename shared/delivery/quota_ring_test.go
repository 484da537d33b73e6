package delivery_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// signIn stores a session for host, as /v1/host/session does, and returns
// its token's hash, with which sendAs sends.
func (e *env) signIn(t testing.TB, host string) string {
	t.Helper()
	hash := fmt.Sprintf("token-hash-%s-%d", host, e.now())
	err := e.store.HostTx(context.Background(), host, func(tx *store.Tx) error {
		return tx.ReplaceSession(context.Background(), host, hash, e.now()+contract.SessionTTL.Milliseconds(), e.now())
	})
	if err != nil {
		t.Fatalf("ReplaceSession: %v", err)
	}
	return hash
}

// sendAs is send with the session whose token hashes to tokenHash, as
// /v1/send sends.
func (e *env) sendAs(t testing.TB, host, tokenHash string, n contract.Notification, ids ...string) contract.Status {
	t.Helper()
	res, err := e.adm.SendAs(context.Background(), host, tokenHash, contract.SendRequest{RegistrationIDs: ids, Notification: n})
	if err != nil {
		t.Fatalf("SendAs: %v", err)
	}
	for _, r := range res[1:] {
		if r.Status != res[0].Status {
			t.Fatalf("SendAs answered %v, want one status", res)
		}
	}
	return res[0].Status
}

// TestQuotaWithASession is TestQuota as /v1/send admits, with the bearer's
// session: on PostgreSQL a host past store's ringFrom alerts in its window
// is decided by the ring in its session (migration 0013), which must be as
// exact as the count, to the millisecond at the window's edge.
func TestQuotaWithASession(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			s, err := store.Open(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			e := mustEnvOn(t, s, clock.NewManual(start))
			a := e.device(t, "hostA", "phone")
			token := e.signIn(t, "hostA")
			for i := range contract.AlertQuota {
				if got := e.sendAs(t, "hostA", token, alert("n", int64(i)), a); got != contract.StatusQueued {
					t.Fatalf("alert %d: %s, want queued", i, got)
				}
				e.clock.Advance(time.Millisecond)
			}
			if d.Name == "postgres" && !hasRing(t, storetest.SQL(t, opts), token) {
				t.Fatal("a host with 300 alerts in its window has no ring in its session")
			}
			before := e.rows(t)
			if got := e.sendAs(t, "hostA", token, alert("n", 1000), a); got != contract.StatusRateLimited {
				t.Fatalf("the 301st alert: %s, want rate_limited", got)
			}
			e.mustRows(t, before) // nothing written
			if got := e.sendAs(t, "hostA", token, alert("n", 5), a); got != contract.StatusQueued {
				t.Fatalf("a duplicate: %s, want queued", got)
			}
			// The first alert leaves the window exactly 15 minutes after it
			// was admitted, the second a millisecond later.
			e.clock.Set(start.Add(contract.QuotaWindow - time.Millisecond))
			if got := e.sendAs(t, "hostA", token, alert("n", 1001), a); got != contract.StatusRateLimited {
				t.Fatalf("a millisecond before the first leaves: %s, want rate_limited", got)
			}
			e.clock.Advance(time.Millisecond)
			if got := e.sendAs(t, "hostA", token, alert("n", 1001), a); got != contract.StatusQueued {
				t.Fatalf("as the first leaves: %s, want queued", got)
			}
			if got := e.sendAs(t, "hostA", token, alert("n", 1002), a); got != contract.StatusRateLimited {
				t.Fatalf("before the second leaves: %s, want rate_limited", got)
			}
			e.clock.Advance(time.Millisecond)
			if got := e.sendAs(t, "hostA", token, alert("n", 1002), a); got != contract.StatusQueued {
				t.Fatalf("as the second leaves: %s, want queued", got)
			}
		})
	}
}

// hasRing reports whether the session of token holds a ring that decides
// (alert_n set) in the PostgreSQL database db.
func hasRing(t testing.TB, db *sql.DB, token string) bool {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(`SELECT alert_n FROM push_sessions WHERE token_hash = $1`, token).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n.Valid
}

// TestQuotaRingAgreesWithTheCount drives one host on PostgreSQL through
// busy and quiet spells from two gateway instances (each with its own
// guess of the host's mode, so each guesses wrong at times), with retries,
// new sessions, and events inserted as an instance of the previous version
// does (naming neither of migration 0013's columns), and checks every
// answer against the window's count: the ring, its rebuilds, its drops and
// the count beside a ring all decide as counting every alert would.
func TestQuotaRingAgreesWithTheCount(t *testing.T) {
	opts, e1, e2 := twoInstances(t)
	db := storetest.SQL(t, opts)
	phones := []string{e1.device(t, "hostA", "phone1"), e1.device(t, "hostA", "phone2")}
	token := e1.signIn(t, "hostA")
	rng := rand.New(rand.NewPCG(32, 13))
	var admitted []int64 // admission times, the model's window
	var sent []int64     // the seqs of alerts admitted, which a retry repeats
	inWindow := func(now int64) int {
		n := 0
		for _, at := range admitted {
			if at > now-contract.QuotaWindow.Milliseconds() {
				n++
			}
		}
		return n
	}
	seen := map[bool]int{} // sends that found a ring, and not
	limited := 0
	seq := int64(0)
	for i := range 3000 {
		// Spells: bursts a second apart for a while, then a calm of
		// minutes between alerts.
		if (i/400)%2 == 0 {
			e1.clock.Advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
		} else {
			e1.clock.Advance(time.Duration(rng.IntN(90)) * time.Second)
		}
		now := e1.clock.Now().UnixMilli()
		switch r := rng.IntN(1000); {
		case r < 2: // a new session, without a ring
			token = e1.signIn(t, "hostA")
			continue
		case r < 7: // an alert admitted by an instance of the previous version
			if inWindow(now) < contract.AlertQuota {
				seq++
				if _, err := db.Exec(`INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
					VALUES ($1, 'hostA', 'alert', 'f', $2, $3)`, fmt.Sprintf("previous-version-%d", seq), now, now+60_000); err != nil {
					t.Fatal(err)
				}
				admitted = append(admitted, now)
			}
			continue
		case r < 70 && len(sent) > 0: // a retry of an alert admitted: never limited, spends nothing
			e := []*env{e1, e2}[rng.IntN(2)]
			if got := e.sendAs(t, "hostA", token, alert("a", sent[rng.IntN(len(sent))]), phones...); got == contract.StatusRateLimited {
				t.Fatalf("send %d: a retry was rate limited", i)
			}
			continue
		}
		seq++
		want := contract.StatusQueued
		if inWindow(now) >= contract.AlertQuota {
			want, limited = contract.StatusRateLimited, limited+1
		}
		seen[hasRing(t, db, token)]++
		e := []*env{e1, e2}[rng.IntN(2)]
		if got := e.sendAs(t, "hostA", token, alert("a", seq), phones[:1+rng.IntN(2)]...); got != want {
			t.Fatalf("send %d at %d with %d alerts in the window: %s, want %s", i, now, inWindow(now), got, want)
		}
		if want == contract.StatusQueued {
			admitted, sent = append(admitted, now), append(sent, seq)
		}
	}
	if seen[true] < 100 || seen[false] < 100 || limited < 100 {
		t.Fatalf("sends that found a ring: %d, that found none: %d, rate limited: %d; want each many", seen[true], seen[false], limited)
	}
}

// TestCountBesideARing: an instance that does not know its host has a ring
// (its guess is to count) admits an alert by the count, exactly, and the
// ring takes that alert too, so that the instance that reads the ring
// next still decides exactly: here the 300th alert, admitted beside the
// ring, must make the ring's next send rate limited.
func TestCountBesideARing(t *testing.T) {
	e1, e2, p, token := ringAt299(t)
	if got := e2.sendAs(t, "hostA", token, alert("n", 1000), p); got != contract.StatusQueued {
		t.Fatalf("the 300th alert, by the count beside the ring: %s, want queued", got)
	}
	if got := e1.sendAs(t, "hostA", token, alert("n", 1001), p); got != contract.StatusRateLimited {
		t.Fatalf("the 301st alert, by the ring: %s, want rate_limited", got)
	}
	if got := e2.sendAs(t, "hostA", token, alert("n", 1002), p); got != contract.StatusRateLimited {
		t.Fatalf("the 301st alert, by the second instance: %s, want rate_limited", got)
	}
}

// TestCrossInstanceQuotaWithARing is TestCrossInstanceQuota with the
// bearer's session, so that the host's 299 alerts leave a ring in it: six
// new alerts sent at once from two instances (in groups, each under the
// host's lock) admit exactly one.
func TestCrossInstanceQuotaWithARing(t *testing.T) {
	e1, e2, p, token := ringAt299(t)
	statuses := make([]contract.Status, 6)
	var wg sync.WaitGroup
	for i := range statuses {
		e := []*env{e1, e2}[i%2]
		wg.Go(func() { statuses[i] = e.sendAs(t, "hostA", token, alert("new", int64(1000+i)), p) })
	}
	wg.Wait()
	mustAdmitOne(t, statuses)
}

// ringAt299 is two instances on one database whose host hostA has a phone,
// p, and a session, token, with 299 alerts a millisecond apart, which
// leave a ring in the session.
func ringAt299(t *testing.T) (e1, e2 *env, p, token string) {
	t.Helper()
	opts, e1, e2 := twoInstances(t)
	p, token = e1.device(t, "hostA", "phone"), e1.signIn(t, "hostA")
	for i := range contract.AlertQuota - 1 {
		if got := e1.sendAs(t, "hostA", token, alert("n", int64(i)), p); got != contract.StatusQueued {
			t.Fatalf("alert %d: %s, want queued", i, got)
		}
		e1.clock.Advance(time.Millisecond)
	}
	if !hasRing(t, storetest.SQL(t, opts), token) {
		t.Fatal("no ring after 299 alerts")
	}
	return e1, e2, p, token
}

// twoInstances opens two stores on one fresh PostgreSQL database, as two
// gateway instances are, each with its own Admission on one manual clock,
// and returns the database's options.
func twoInstances(t *testing.T) (store.Options, *env, *env) {
	t.Helper()
	opts := storetest.PostgresOptions(t)
	open := func() *store.Store {
		s, err := store.Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	clk := clock.NewManual(start)
	return opts, mustEnvOn(t, open(), clk), mustEnvOn(t, open(), clk)
}

// TestRingWithAnEventFarAhead: an alert stamped 40 days ahead (an instance
// with a wrong clock) is in every window until then; rebuilding the ring
// stores its offset clamped to int4 rather than failing the send, and the
// host's alerts are still admitted.
func TestRingWithAnEventFarAhead(t *testing.T) {
	opts, e1, _ := twoInstances(t)
	p, token := e1.device(t, "hostA", "phone"), e1.signIn(t, "hostA")
	ahead := e1.now() + (40 * 24 * time.Hour).Milliseconds()
	if _, err := storetest.SQL(t, opts).Exec(`INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
		VALUES ('ahead', 'hostA', 'alert', 'f', $1, $1)`, ahead); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if got := e1.sendAs(t, "hostA", token, alert("n", int64(i)), p); got != contract.StatusQueued {
			t.Fatalf("alert %d: %s, want queued", i, got)
		}
		e1.clock.Advance(time.Second)
	}
	if !hasRing(t, storetest.SQL(t, opts), token) {
		t.Fatal("no ring after 60 alerts")
	}
}
