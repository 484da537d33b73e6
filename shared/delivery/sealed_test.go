package delivery_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// sealed returns a sealed alert as today's desktop makes it: a placeholder
// title, an empty body, an opaque id and epoch, and a paneKey starting with
// contract.SealedPaneKeyPrefix.
func sealed(seq int64) contract.Notification {
	return contract.Notification{
		NotificationID: fmt.Sprintf("e2e1.%032d", seq), Seq: seq, Epoch: "e2e1.epoch", Source: contract.SourceAgentTaskComplete,
		AgentState: contract.AgentNeedsInput, Title: "Agent needs input", Body: "",
		PaneKey: fmt.Sprintf("%sbm9uY2Utb2Ytc2VxLSVk%d", contract.SealedPaneKeyPrefix, seq), ExecutionHost: "runtime:env%201",
	}
}

// TestSealedAlertsAreNeverSummarised: five sealed alerts in one burst to one
// phone make five batches of one, each due at once; the phone's open batch
// of unsealed alerts is left as it was (not flushed, still joinable), and a
// burst of unsealed alerts to another phone still coalesces.
func TestSealedAlertsAreNeverSummarised(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p, other := e.device(t, "hostA", "phone"), e.device(t, "hostA", "other")
			now := e.now()
			e.mustSend(t, contract.StatusQueued, "hostA", alert("open", 1), p)
			open := e.sched.take()
			for i := range 5 {
				e.mustSend(t, contract.StatusQueued, "hostA", sealed(int64(10+i)), p)
			}
			calls := e.sched.take()
			if len(calls) != 5 {
				t.Fatalf("five sealed alerts scheduled %v, want five batches", calls)
			}
			for _, c := range calls {
				b := e.batch(t, c.BatchID)
				if c.At != now || b.DueAt != now || b.Members != 1 || !e.members(t, c.BatchID)[0].Sealed() {
					t.Errorf("sealed batch due %d with %d members, scheduled at %d; want one sealed member due now (%d)",
						b.DueAt, b.Members, c.At, now)
				}
			}
			// The open batch was not touched, and still takes an unsealed alert.
			e.mustSend(t, contract.StatusQueued, "hostA", alert("joins", 2), p)
			if calls := e.sched.take(); len(calls) != 0 {
				t.Errorf("an alert after the sealed ones scheduled %v, want it to join the open batch", calls)
			}
			mustBatchOf(t, e, open[0].BatchID, 2, now+window)

			for i := range 5 {
				e.mustSend(t, contract.StatusQueued, "hostA", alert(fmt.Sprintf("b%d", i), int64(20+i)), other)
			}
			if calls := e.sched.take(); len(calls) != 1 {
				t.Fatalf("five unsealed alerts scheduled %v, want one batch", calls)
			} else {
				mustBatchOf(t, e, calls[0].BatchID, 5, now+window)
			}
			e.mustRows(t, map[string]int64{"events": 12, "recipients": 12, "fences": 0, "batches": 7})
		})
	}
}

// TestSealedBatchNeverJoined: with no coalescing window and a clock that has
// not moved, nothing joins a sealed alert's batch, due at that same
// millisecond, and it joins nothing; with the default window, an unsealed
// alert after a sealed one opens a batch of its own.
func TestSealedBatchNeverJoined(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, w := range []int64{0, window} {
				e := mustEnv(t, d)
				e.setWindow(t, time.Duration(w)*time.Millisecond)
				p := e.device(t, "hostA", "phone")
				now := e.now()
				for i, n := range []contract.Notification{sealed(1), sealed(2), alert("a", 3), sealed(4)} {
					e.mustSend(t, contract.StatusQueued, "hostA", n, p)
					want := now
					if !n.Sealed() {
						want = now + w
					}
					calls := e.sched.take()
					if diff := cmp.Diff([]int64{want}, ats(calls)); diff != "" {
						t.Fatalf("window %d, send %d: scheduled at (-want +got):\n%s", w, i, diff)
					}
					mustBatchOf(t, e, calls[0].BatchID, 1, want)
				}
			}
		})
	}
}

// TestIdempotencySealed: the same identity with another paneKey or
// executionHost is other content (error, nothing written); the desktop's
// retry of the identical object is queued with nothing new.
func TestIdempotencySealed(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			n := sealed(1)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			rows := map[string]int64{"events": 1, "recipients": 1, "fences": 0, "batches": 1}
			e.mustRows(t, rows)
			otherPane, otherHost, noHost := n, n, n
			otherPane.PaneKey += "x"
			otherHost.ExecutionHost += "x"
			noHost.ExecutionHost = ""
			for _, tt := range []struct {
				name string
				n    contract.Notification
				want contract.Status
			}{
				{"another paneKey", otherPane, contract.StatusError},
				{"another executionHost", otherHost, contract.StatusError},
				{"executionHost left out", noHost, contract.StatusError},
				{"identical retry", n, contract.StatusQueued},
			} {
				if got := e.send(t, "hostA", tt.n, p); got[0] != tt.want {
					t.Errorf("%s: status %q, want %q", tt.name, got[0], tt.want)
				}
				e.mustRows(t, rows)
			}
			if calls := e.sched.take(); len(calls) != 1 {
				t.Errorf("scheduled %v, want the first send's batch only", calls)
			}
		})
	}
}

// setWindow replaces e's Admission with one whose coalescing window is w.
func (e *env) setWindow(t testing.TB, w time.Duration) {
	t.Helper()
	var err error
	e.adm, err = delivery.NewAdmission(delivery.Options{Keys: sealtest.Ring(t), Digest: sealtest.DigestKey(t), Store: e.store, Clock: e.clock, Counters: e.counters,
		Scheduler: e.sched, Coalesce: w})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSealedDismissal: a dismissal fences and cancels a sealed alert by its
// opaque id and epoch as for any alert: the sealed batch, due but not yet
// delivered, ends dismissed, and the same alert sent again is dropped.
func TestSealedDismissal(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			n := sealed(3)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			batch := e.sched.take()[0].BatchID
			dismiss := sealed(4)
			dismiss.NotificationID, dismiss.Kind = n.NotificationID, contract.KindDismiss
			e.mustSend(t, contract.StatusQueued, "hostA", dismiss, p)
			if b := e.batch(t, batch); b.State != store.BatchDismissed {
				t.Errorf("sealed batch is %s, want dismissed", b.State)
			}
			e.sched.take()
			before := e.rows(t)
			e.mustSend(t, contract.StatusQueued, "hostA", sealed(2), p) // its own opaque id: not fenced
			again := n
			again.Seq = 1 // below the fence, same opaque id and epoch
			e.mustSend(t, contract.StatusQueued, "hostA", again, p)
			if calls := e.sched.take(); len(calls) != 1 {
				t.Errorf("after the fence scheduled %v, want only the alert with its own id", calls)
			}
			if got := e.rows(t)["batches"]; got != before["batches"]+1 {
				t.Errorf("batches %d, want %d", got, before["batches"]+1)
			}
		})
	}
}

// TestBatchIDsGrow: the batches that sends open one after another have ids
// that compare in that order, byte by byte (store.NewBatchID), so that a
// batch's key goes to the right end of the batches' key index.
func TestBatchIDsGrow(t *testing.T) {
	e := mustEnv(t, storetest.Dialects(t)[0])
	p := e.device(t, "hostA", "phone")
	var ids []string
	for i := range 8 {
		e.mustSend(t, contract.StatusQueued, "hostA", sealed(int64(10+i)), p)
		calls := e.sched.take()
		if len(calls) != 1 {
			t.Fatalf("send %d scheduled %v, want one batch", i, calls)
		}
		ids = append(ids, calls[0].BatchID)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Errorf("batch %d's id %q does not follow %q", i, ids[i], ids[i-1])
		}
	}
}
