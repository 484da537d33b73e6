package delivery_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestDismissal: a dismissal raises its fence, removes the alerts it covers
// from pending batches (an emptied batch ends dismissed), is due now on its
// own, and an alert at or below the fence is queued but never enqueued
// (reference-behaviour §4.4 with the decisions table).
func TestDismissal(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			now := e.now()
			e.mustSend(t, contract.StatusQueued, "hostA", alert("x", 5), p)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("y", 1), p)
			open := e.sched.take()[0].BatchID

			// Dismissing x up to 7 leaves y alone in the open batch.
			e.mustSend(t, contract.StatusQueued, "hostA", dismissal("x", 7), p)
			d1 := e.sched.take()
			if len(d1) != 1 || d1[0].At != now {
				t.Fatalf("dismissal scheduled %v, want one batch due now", d1)
			}
			if b := e.batch(t, d1[0].BatchID); b.Kind != contract.KindDismiss || b.Members != 1 || b.DueAt != now {
				t.Errorf("dismissal batch %+v, want a due dismissal of one", b)
			}
			if diff := cmp.Diff([]int64{1}, seqs(e.members(t, open))); diff != "" {
				t.Errorf("open batch seqs (-want +got):\n%s", diff)
			}

			// Alerts at or below the fence are accepted and dropped; the
			// event rows (and their quota) stay, and each is recorded as a
			// dismissed recipient, in no batch, for its receipt.
			before := e.rows(t)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("x", 7), p)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("x", 6), p)
			if calls := e.sched.take(); len(calls) != 0 {
				t.Errorf("fenced alerts scheduled %v", calls)
			}
			before["events"] += 2
			before["recipients"] += 2
			e.mustRows(t, before)
			if diff := cmp.Diff([]int64{1}, seqs(e.members(t, open))); diff != "" {
				t.Errorf("open batch seqs after fenced alerts (-want +got):\n%s", diff)
			}

			// A later alert of x is enqueued (it joins the open batch).
			e.mustSend(t, contract.StatusQueued, "hostA", alert("x", 8), p)
			if diff := cmp.Diff([]int64{1, 8}, seqs(e.members(t, open))); diff != "" {
				t.Errorf("open batch seqs (-want +got):\n%s", diff)
			}
			// A lower dismissal does not lower the fence and still removes
			// what it covers.
			e.mustSend(t, contract.StatusQueued, "hostA", dismissal("y", 1), p)
			e.mustSend(t, contract.StatusQueued, "hostA", dismissal("x", 3), p)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("x", 4), p)
			if diff := cmp.Diff([]int64{8}, seqs(e.members(t, open))); diff != "" {
				t.Errorf("open batch seqs (-want +got):\n%s", diff)
			}
			// The last member dismissed: the batch ends dismissed, cleared.
			e.mustSend(t, contract.StatusQueued, "hostA", dismissal("x", 8), p)
			b := e.batch(t, open)
			if b.State != store.BatchDismissed || b.Payload != store.EmptyPayload || b.Members != 0 {
				t.Errorf("emptied batch is %s with %q and %d members, want dismissed, [] and 0", b.State, b.Payload, b.Members)
			}
			if got := e.rows(t)["fences"]; got != 2 {
				t.Errorf("fences = %d, want 2 (x and y)", got)
			}
		})
	}
}

// TestDismissalFanOut: one dismissal to two phones cancels the alert queued
// for each of them and records one fence.
func TestDismissalFanOut(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p1, p2 := e.device(t, "hostA", "phone1"), e.device(t, "hostA", "phone2")
			e.mustSend(t, contract.StatusQueued, "hostA", alert("x", 1), p1, p2)
			alerts := e.sched.take()
			e.mustSend(t, contract.StatusQueued, "hostA", dismissal("x", 1), p1, p2)
			for _, c := range alerts {
				if b := e.batch(t, c.BatchID); b.State != store.BatchDismissed {
					t.Errorf("alert batch %s is %s, want dismissed", c.BatchID, b.State)
				}
			}
			if calls := e.sched.take(); len(calls) != 2 {
				t.Errorf("scheduled %v, want two dismissal batches", calls)
			}
			e.mustRows(t, map[string]int64{"events": 2, "recipients": 4, "fences": 1, "batches": 4})
		})
	}
}
