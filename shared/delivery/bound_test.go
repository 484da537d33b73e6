package delivery_test

import (
	"context"
	"strings"
	"testing"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// Members bound whole (issue 30 §4): every clear field of a stored member is
// bound to its seal, and members in the clear are read only in batches
// stored before sealing.

// mustOpen opens the database of opts, closed when the test ends.
func mustOpen(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustKeyedEnvOn is a keyed env over the database of opts, opened by the
// test, under a ring of one key k1.
func mustKeyedEnvOn(t *testing.T, s *store.Store, clk *clock.Manual) *keyedEnv {
	t.Helper()
	e := &keyedEnv{env: mustEnvOn(t, s, clk)}
	e.rekey(t, ring(t, keyEntry(t, "k1")))
	return e
}

// mustRowEnv is a keyed env over a fresh database of d whose rows the test
// edits (the options it returns), with a phone of hostA.
func mustRowEnv(t *testing.T, d storetest.Dialect) (e *keyedEnv, opts store.Options, phone string) {
	t.Helper()
	opts = d.Options(t)
	e = mustKeyedEnvOn(t, mustOpen(t, opts), clock.NewManual(start))
	return e, opts, e.device(t, "hostA", "phone")
}

// setPayload stores payload as batch id's members, as an edit in the
// database would.
func setPayload(t *testing.T, opts store.Options, id, payload string) {
	t.Helper()
	if _, err := storetest.SQL(t, opts).Exec(`UPDATE push_delivery_batches SET payload_json = $1 WHERE batch_id = $2`,
		payload, id); err != nil {
		t.Fatal(err)
	}
}

// mustUnopened fails unless batch id ended expired, counted once as
// payload_unopenable (the path that ends it with reason payload_key_unknown,
// TestUnopenableExpires), and e sent nothing.
func (e *keyedEnv) mustUnopened(t *testing.T, id string) {
	t.Helper()
	b := e.batch(t, id)
	if b.State != store.BatchExpired || len(e.sent) != 0 {
		t.Fatalf("batch %s ended %s, sent %+v; want expired, none sent", id, b.State, e.sent)
	}
	if n := e.counters.Totals()[obs.PayloadUnopenable]; n != 1 {
		t.Errorf("payload_unopenable = %d, want 1", n)
	}
}

// TestEditedNotificationIDCannotEscapeDismissal: a member whose clear
// notificationId was edited in the database, so that the claim finds no
// fence for it, opens nowhere: dismissed while a crashed delivery held its
// batch (admission then leaves the batch to the claim's fences), it is not
// sent when the batch is claimed again, which ends expired as unopenable
// (both databases).
func TestEditedNotificationIDCannotEscapeDismissal(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e, opts, p := mustRowEnv(t, d)
			b1 := e.queue(t, p, alert("mine", 1))
			payload := e.batch(t, b1).Payload
			edited := strings.Replace(payload, `"notificationId":"mine"`, `"notificationId":"else"`, 1)
			if edited == payload {
				t.Fatalf("payload %s holds no clear notificationId", payload)
			}
			setPayload(t, opts, b1, edited)

			e.clock.Advance(contract.DefaultCoalesce)
			if c, err := e.store.ClaimBatch(context.Background(), b1, "crashed", e.now(),
				e.now()+contract.LeaseDuration.Milliseconds(), "expired"); err != nil || !c.Leased {
				t.Fatalf("ClaimBatch = %+v, %v; want leased", c, err)
			}
			e.mustSend(t, contract.StatusQueued, "hostA", dismissal("mine", 1), p)
			e.sched.take()
			e.clock.Advance(contract.LeaseDuration)
			e.deliver(t, b1)
			e.mustUnopened(t, b1)
		})
	}
}

// TestMemberBoundToItsBatch: a sealed member copied into another batch of
// the same registration opens nowhere: that batch expires as unopenable and
// nothing is sent, while the member's own batch is delivered (both
// databases).
func TestMemberBoundToItsBatch(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e, opts, p := mustRowEnv(t, d)
			b1 := e.queue(t, p, alert("mine", 1))
			e.clock.Advance(contract.DefaultCoalesce)
			b2 := e.queue(t, p, alert("later", 2))
			if b1 == b2 {
				t.Fatal("the second alert joined the first's batch; want a batch of its own")
			}
			setPayload(t, opts, b2, e.batch(t, b1).Payload)
			e.clock.Advance(contract.DefaultCoalesce)
			e.deliver(t, b2)
			e.mustUnopened(t, b2)
			e.deliver(t, b1)
			if len(e.sent) != 1 || e.sent[0].Body != "Agent mine is done" {
				t.Fatalf("sent %+v, want the first batch's own alert", e.sent)
			}
		})
	}
}

// TestPlainMemberInNewBatchRefused: a member in the clear, as the gateway
// stored them before sealing, planted in a batch stored after sealing is
// never sent: an alert that would join the batch opens one of its own, and
// the batch ends expired as unopenable at its claim (both databases).
func TestPlainMemberInNewBatchRefused(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e, opts, p := mustRowEnv(t, d)
			planted := alert("planted", 1)
			b := e.queue(t, p, planted)
			setPayload(t, opts, b, string(contract.AppendNotifications(nil, []contract.Notification{planted})))
			e.mustSend(t, contract.StatusQueued, "hostA", alert("next", 2), p)
			e.sched.take()
			if n := e.batch(t, b).Members; n != 1 {
				t.Fatalf("the batch holding a member in the clear has %d members after the next alert, want 1", n)
			}
			e.clock.Advance(contract.DefaultCoalesce)
			e.deliver(t, b)
			e.mustUnopened(t, b)
		})
	}
}

// mustRestamp reruns migration 0007 on the database of opts, as when an
// instance of this version first opens a database holding the previous
// version's batches, and returns the store it opens.
func mustRestamp(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	db := storetest.SQL(t, opts)
	for _, q := range []string{`DELETE FROM push_schema_migrations WHERE version = 7`, `DROP TABLE push_seal_cutoff`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return mustOpen(t, opts)
}

// TestMembersStoredBeforeSealing: a pending batch as the previous version
// stored it, its member in the clear, is still delivered by an instance
// that migrated the database after it was stored; admission does not read
// it (an alert that would join it opens a batch of its own), and the
// cut-off holds only for batches stored before the migration and for an
// event's lifetime after it (both databases).
func TestMembersStoredBeforeSealing(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			clk := clock.NewManual(start)
			before := mustKeyedEnvOn(t, mustOpen(t, opts), clk)
			p := before.device(t, "hostA", "phone")
			old := alert("old", 1)
			b := before.queue(t, p, old)
			setPayload(t, opts, b, string(contract.AppendNotifications(nil, []contract.Notification{old})))
			created := before.batch(t, b).CreatedAt
			if before.store.PlainMembers(created, before.now()) {
				t.Fatal("a store migrated before any batch was stored reads members in the clear")
			}

			e := mustKeyedEnvOn(t, mustRestamp(t, opts), clk)
			cutoff := created + 1
			for _, tt := range []struct {
				createdAt, now int64
				want           bool
			}{
				{created, e.now(), true},
				{cutoff, e.now(), false},
				{created, cutoff + contract.EventLifetime.Milliseconds() - 1, true},
				{created, cutoff + contract.EventLifetime.Milliseconds(), false},
			} {
				if got := e.store.PlainMembers(tt.createdAt, tt.now); got != tt.want {
					t.Errorf("PlainMembers(%d, %d) = %v, want %v (cut-off %d)", tt.createdAt, tt.now, got, tt.want, cutoff)
				}
			}
			next := alert("new", 2)
			b2 := e.queue(t, p, next)
			if b2 == b {
				t.Fatal("the new alert joined the batch stored before sealing")
			}
			e.clock.Advance(contract.DefaultCoalesce)
			e.deliver(t, b)
			e.deliver(t, b2)
			if len(e.sent) != 2 || e.sent[0].Body != old.Body || e.sent[1].Body != next.Body {
				t.Fatalf("sent %+v, want the old alert, then the new one", e.sent)
			}
		})
	}
}
