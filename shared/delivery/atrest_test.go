package delivery_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// keyEntry returns a new key with the given id as one ring entry.
func keyEntry(t *testing.T, id string) string {
	t.Helper()
	e, err := seal.NewEntry(rand.Reader, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ring parses a ring written as ORCA_PUSH_PAYLOAD_KEYS.
func ring(t *testing.T, s string) *seal.Ring {
	t.Helper()
	r, err := seal.ParseRing(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// keyedEnv is an env whose Admission and Deliverer use the rings a test
// gives (rekey), with a provider that records what it is sent.
type keyedEnv struct {
	*env
	sent []push.Message
	dl   *delivery.Deliverer
}

func (p *keyedEnv) Send(_ context.Context, _ push.Target, m push.Message) push.Outcome {
	p.sent = append(p.sent, m)
	return push.Outcome{Kind: push.Sent}
}

// rekey replaces the Admission and the Deliverer with ones over keys, as a
// redeploy with another ORCA_PUSH_PAYLOAD_KEYS does.
func (e *keyedEnv) rekey(t *testing.T, keys *seal.Ring) {
	t.Helper()
	var err error
	if e.adm, err = delivery.NewAdmission(delivery.Options{Keys: keys, Digest: sealtest.DigestKey(t), Store: e.store, Clock: e.clock,
		Counters: e.counters, Scheduler: e.sched, Coalesce: contract.DefaultCoalesce}); err != nil {
		t.Fatal(err)
	}
	if e.dl, err = delivery.NewDeliverer(delivery.DelivererOptions{Keys: keys, Store: e.store, Clock: e.clock,
		Counters: e.counters, Scheduler: e.sched, APNS: e, FCM: e}); err != nil {
		t.Fatal(err)
	}
}

func mustKeyedEnv(t *testing.T, d storetest.Dialect, keys *seal.Ring) *keyedEnv {
	t.Helper()
	e := &keyedEnv{env: mustEnv(t, d)}
	e.counters = obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	e.rekey(t, keys)
	return e
}

// queue sends n to reg and returns its batch.
func (e *keyedEnv) queue(t *testing.T, reg string, n contract.Notification) string {
	t.Helper()
	e.mustSend(t, contract.StatusQueued, "hostA", n, reg)
	calls := e.sched.take()
	return calls[len(calls)-1].BatchID
}

func (e *keyedEnv) deliver(t *testing.T, id string) {
	t.Helper()
	if err := e.dl.Deliver(context.Background(), id); err != nil {
		t.Fatalf("Deliver(%s) = %v", id, err)
	}
}

// TestRotation: an alert sealed under the old key is delivered with its
// text after the ring becomes new,old; one sent after the rotation is
// sealed under the new key and delivered too, and one that joins a batch
// of the old key's is sealed under the new one beside it and delivered in
// its summary (both databases).
func TestRotation(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			oldKey, newKey := keyEntry(t, "old"), keyEntry(t, "new")
			e := mustKeyedEnv(t, d, ring(t, oldKey))
			p, q := e.device(t, "hostA", "phone"), e.device(t, "hostA", "tablet")
			before := alert("before", 1)
			b1 := e.queue(t, p, before)
			e.rekey(t, ring(t, newKey+","+oldKey))
			after := alert("after", 2)
			b2 := e.queue(t, q, after)
			if got := e.batch(t, b1).Payload; !strings.Contains(got, `"sealed":"v2.old:`) {
				t.Fatalf("batch sealed before the rotation holds %s, want the old key's", got)
			}
			if got := e.batch(t, b2).Payload; !strings.Contains(got, `"sealed":"v2.new:`) || strings.Contains(got, `"v2.old:`) {
				t.Fatalf("batch sealed after the rotation holds %s, want the new key's", got)
			}
			e.clock.Advance(contract.DefaultCoalesce)
			e.deliver(t, b1)
			e.deliver(t, b2)
			if len(e.sent) != 2 || e.sent[0].Title != before.Title || e.sent[0].Body != before.Body ||
				e.sent[1].Title != after.Title || e.sent[1].Body != after.Body {
				t.Fatalf("sent %+v, want both alerts with their text", e.sent)
			}
			for _, id := range []string{b1, b2} {
				if st := e.batch(t, id).State; st != store.BatchSent {
					t.Errorf("batch %s %s, want sent", id, st)
				}
			}

			// A batch of the old key's joined after the rotation.
			e.rekey(t, ring(t, oldKey))
			b3 := e.queue(t, p, alert("first", 3))
			e.rekey(t, ring(t, newKey+","+oldKey))
			e.mustSend(t, contract.StatusQueued, "hostA", alert("second", 4), p)
			e.sched.take()
			if got := e.batch(t, b3).Payload; !strings.Contains(got, `"sealed":"v2.old:`) || !strings.Contains(got, `"sealed":"v2.new:`) {
				t.Fatalf("joined batch holds %s, want a member of each key", got)
			}
			e.clock.Advance(contract.DefaultCoalesce)
			e.deliver(t, b3)
			if m := e.sent[len(e.sent)-1]; len(e.sent) != 3 || m.CoalescedCount != 2 || len(m.SummaryMembers) != 2 {
				t.Fatalf("sent %+v, want a summary of both", m)
			}
		})
	}
}

// TestUnopenableExpires: a batch that does not authenticate under the key
// of the ring its id names (here another key under the same id) ends
// expired with reason payload_key_unknown at its claim, without a provider
// call or an error, and its receipt says so; an alert that would join it
// opens a batch of its own and is delivered, and a dismissal of its
// notification is accepted (both databases). A key id the ring lacks is
// another matter: TestKeyNotHeldLeaves.
func TestUnopenableExpires(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			lost := keyEntry(t, "lost")
			e := mustKeyedEnv(t, d, ring(t, lost))
			p := e.device(t, "hostA", "phone")
			gone := alert("gone", 1)
			b1 := e.queue(t, p, gone)
			e.rekey(t, ring(t, keyEntry(t, "lost")))
			e.mustSend(t, contract.StatusQueued, "hostA", alert("next", 2), p)
			calls := e.sched.take()
			var b2 string
			for _, c := range calls {
				if c.BatchID != b1 {
					b2 = c.BatchID
				}
			}
			if b2 == "" || e.batch(t, b1).Members != 1 {
				t.Fatalf("the next alert joined the unopenable batch (scheduled %+v)", calls)
			}
			bye := dismissal("gone", 1)
			e.mustSend(t, contract.StatusQueued, "hostA", bye, p)
			e.sched.take()

			e.deliver(t, b1)
			b := e.batch(t, b1)
			if b.State != store.BatchExpired || len(e.sent) != 0 {
				t.Fatalf("unopenable batch %s, sent %d; want expired, none sent", b.State, len(e.sent))
			}
			if b.Payload != store.EmptyPayload {
				t.Errorf("expired batch keeps %s", b.Payload)
			}
			if n := e.counters.Totals()[obs.PayloadUnopenable]; n != 1 {
				t.Errorf("payload_unopenable = %d, want 1", n)
			}
			rs, err := delivery.NewReceipts(delivery.ReceiptsOptions{Store: e.store, Clock: e.clock, Counters: e.counters})
			if err != nil {
				t.Fatal(err)
			}
			res, err := rs.Read(context.Background(), "hostA", contract.ReceiptsRequest{Events: []contract.EventRef{
				{Kind: contract.KindAlert, Epoch: gone.Epoch, Seq: gone.Seq}}})
			if err != nil {
				t.Fatal(err)
			}
			if r := res.Receipts[0].Recipients; len(r) != 1 || r[0].Status != contract.ReceiptExpired || r[0].Reason != "payload_key_unknown" {
				t.Fatalf("receipt %+v, want expired with payload_key_unknown", res.Receipts[0])
			}
			e.clock.Advance(contract.DefaultCoalesce)
			e.deliver(t, b2)
			if len(e.sent) != 1 || e.sent[0].Title != "Task finished" {
				t.Fatalf("sent %+v, want the next alert", e.sent)
			}
		})
	}
}

// TestMemberBoundToItsRow: a batch's sealed members copied into another
// registration's batch open nowhere: that batch expires with reason
// payload_key_unknown and nothing is sent (both databases).
func TestMemberBoundToItsRow(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e, opts, p := mustRowEnv(t, d)
			q := e.device(t, "hostA", "tablet")
			b1, b2 := e.queue(t, p, alert("mine", 1)), e.queue(t, q, alert("theirs", 2))
			setPayload(t, opts, b2, e.batch(t, b1).Payload)
			e.clock.Advance(contract.DefaultCoalesce)
			e.deliver(t, b2)
			if st := e.batch(t, b2).State; st != store.BatchExpired || len(e.sent) != 0 {
				t.Fatalf("the batch with another row's members ended %s, sent %d; want expired, none", st, len(e.sent))
			}
			e.deliver(t, b1)
			if len(e.sent) != 1 || e.sent[0].Body != "Agent mine is done" {
				t.Fatalf("sent %+v, want the first batch's own alert", e.sent)
			}
		})
	}
}
