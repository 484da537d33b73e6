package delivery_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// sealingWith is the ring keys sealing with the key of id.
func sealingWith(t *testing.T, keys, id string) *seal.Ring {
	t.Helper()
	r, err := ring(t, keys).WithSealKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// instance is a Deliverer over e's store, clock, scheduler and providers
// with a ring of its own and counters of its own: another instance of the
// deliver function, started with another ORCA_PUSH_PAYLOAD_KEYS.
func (e *keyedEnv) instance(t *testing.T, keys *seal.Ring) (*delivery.Deliverer, *obs.Counters) {
	t.Helper()
	counters := obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: keys, Store: e.store, Clock: e.clock,
		Counters: counters, Scheduler: e.sched, APNS: e, FCM: e})
	if err != nil {
		t.Fatal(err)
	}
	return dl, counters
}

// receipt is the receipt of host's alert n.
func (e *keyedEnv) receipt(t *testing.T, n contract.Notification) contract.RecipientReceipt {
	t.Helper()
	rs, err := delivery.NewReceipts(delivery.ReceiptsOptions{Store: e.store, Clock: e.clock, Counters: e.counters})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rs.Read(context.Background(), "hostA", contract.ReceiptsRequest{Events: []contract.EventRef{
		{Kind: contract.KindAlert, Epoch: n.Epoch, Seq: n.Seq}}})
	if err != nil || len(res.Receipts) != 1 || len(res.Receipts[0].Recipients) != 1 {
		t.Fatalf("receipts = %+v, %v", res, err)
	}
	return res.Receipts[0].Recipients[0]
}

// TestKeyNotHeldLeaves: an instance whose ring lacks the key a batch was
// sealed with (one instance already seals with a new key that another does
// not hold yet) leaves the batch: no provider call, no attempt counted, no
// end; it is due again a little later, and an instance that holds the key
// delivers it then, as its first attempt (both databases).
func TestKeyNotHeldLeaves(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			k1, k2 := keyEntry(t, "k1"), keyEntry(t, "k2")
			e := mustKeyedEnv(t, d, sealingWith(t, k1+","+k2, "k2"))
			lacking, lackingCounts := e.instance(t, ring(t, k1))
			p := e.device(t, "hostA", "phone")
			n := alert("a", 1)
			b := e.queue(t, p, n)
			e.clock.Advance(contract.DefaultCoalesce)

			if err := lacking.Deliver(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			got := e.batch(t, b)
			if got.State != store.BatchPending || got.Attempts != 0 || got.LeaseUntil != 0 || got.DueAt <= e.now() || len(e.sent) != 0 {
				t.Fatalf("after the claim of an instance without k2: %s, %d attempts, lease %d, due %d (now %d), %d sent; "+
					"want pending, 0 attempts, no lease, due later, none sent", got.State, got.Attempts, got.LeaseUntil, got.DueAt, e.now(), len(e.sent))
			}
			if calls := e.sched.take(); len(calls) != 1 || calls[0].BatchID != b || calls[0].At != got.DueAt {
				t.Fatalf("scheduled %+v, want the batch at its new due time %d", calls, got.DueAt)
			}
			totals := lackingCounts.Totals()
			if totals[obs.PayloadKeyNotHeld] != 1 || totals[obs.PayloadUnopenable] != 0 || totals[obs.DeliveryExpired] != 0 {
				t.Fatalf("counters %v, want payload_key_not_held 1 and nothing expired", totals)
			}
			if r := e.receipt(t, n); r.Status != contract.ReceiptQueued {
				t.Fatalf("receipt %+v, want queued: no attempt was made", r)
			}

			e.clock.Set(time.UnixMilli(got.DueAt))
			e.deliver(t, b)
			if st := e.batch(t, b).State; st != store.BatchSent || len(e.sent) != 1 || e.sent[0].Title != n.Title {
				t.Fatalf("the instance holding k2 left the batch %s with %d sent, want it sent", st, len(e.sent))
			}
			if n := e.counters.Totals()[obs.DeliveryRetry]; n != 0 {
				t.Errorf("delivery_retry = %d, want 0: the claim that left the batch is no attempt", n)
			}
		})
	}
}

// TestKeyNotHeldUntilDeadline: a batch no instance can open because its key
// was dropped too early is left at each claim, claims growing apart, and
// ends expired with reason payload_key_unknown at its last claim before its
// deadline, in about twenty claims (both databases).
func TestKeyNotHeldUntilDeadline(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustKeyedEnv(t, d, ring(t, keyEntry(t, "lost")))
			p := e.device(t, "hostA", "phone")
			n := alert("gone", 1)
			b := e.queue(t, p, n)
			deadline := e.batch(t, b).ExpiresAt
			e.rekey(t, ring(t, keyEntry(t, "new")))
			e.clock.Advance(contract.DefaultCoalesce)
			claims := 0
			for ; e.batch(t, b).State == store.BatchPending && claims < 40; claims++ {
				e.deliver(t, b)
				for _, c := range e.sched.take() {
					if c.BatchID == b {
						e.clock.Set(time.UnixMilli(c.At))
					}
				}
			}
			got := e.batch(t, b)
			if got.State != store.BatchExpired || len(e.sent) != 0 {
				t.Fatalf("after %d claims the batch is %s, %d sent; want expired, none sent", claims, got.State, len(e.sent))
			}
			if claims < 10 || claims > 25 || e.now() >= deadline {
				t.Errorf("it ended after %d claims at %d (deadline %d), want about twenty, before the deadline", claims, e.now(), deadline)
			}
			totals := e.counters.Totals()
			if totals[obs.PayloadUnopenable] != 1 || totals[obs.PayloadKeyNotHeld] != int64(claims-1) {
				t.Errorf("counters %v, want payload_unopenable 1 and payload_key_not_held %d", totals, claims-1)
			}
			if r := e.receipt(t, n); r.Status != contract.ReceiptExpired || r.Reason != "payload_key_unknown" {
				t.Fatalf("receipt %+v, want expired with payload_key_unknown", r)
			}
		})
	}
}
