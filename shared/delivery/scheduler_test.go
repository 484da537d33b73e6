package delivery_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store/storetest"
)

// TestSchedulerHandOver: the scheduler sees exactly the new and newly-due
// batches, at their due times, and each has scheduled_at set to now.
func TestSchedulerHandOver(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p1, p2 := e.device(t, "hostA", "phone1"), e.device(t, "hostA", "phone2")
			t0 := e.now()
			steps := []struct {
				name string
				n    contract.Notification
				ids  []string
				want []int64 // due times handed over
			}{
				{"new alert to two phones opens two batches", alert("a", 1), []string{p1, p2}, []int64{t0 + window, t0 + window}},
				{"a join hands nothing over", alert("b", 2), []string{p1}, nil},
				{"a repeat hands nothing over", alert("a", 1), []string{p1, p2}, nil},
				{"a bell makes the open batch due and opens one", bell(3), []string{p1}, []int64{t0, t0 + window}},
				{"a dismissal is due now; the batch it empties is not handed over", dismissal("a", 1), []string{p2}, []int64{t0}},
			}
			for _, s := range steps {
				e.mustSend(t, contract.StatusQueued, "hostA", s.n, s.ids...)
				calls := e.sched.take()
				if diff := cmp.Diff(s.want, ats(calls)); diff != "" {
					t.Errorf("%s: due times (-want +got):\n%s", s.name, diff)
				}
				for _, c := range calls {
					if b := e.batch(t, c.BatchID); b.ScheduledAt != t0 || b.DueAt != c.At {
						t.Errorf("%s: batch scheduled_at %d due %d, want %d and %d", s.name, b.ScheduledAt, b.DueAt, t0, c.At)
					}
				}
			}
		})
	}
}

// TestScheduleFailureIsCounted: a scheduler failure never fails the send; it
// is counted, and the committed batch waits for the sweep.
func TestScheduleFailureIsCounted(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p1, p2 := e.device(t, "hostA", "phone1"), e.device(t, "hostA", "phone2")
			e.sched.fail = true
			e.mustSend(t, contract.StatusQueued, "hostA", alert("a", 1), p1, p2)
			got := e.counters.Consume()
			if got[obs.ScheduleFailed] != 2 || got[obs.SendQueued] != 2 {
				t.Errorf("counters %v, want schedule_failed 2 and send_queued 2", got)
			}
			e.mustRows(t, map[string]int64{"events": 1, "recipients": 2, "fences": 0, "batches": 2})
		})
	}
}

// TestDueBeforeDeadline: a batch is always due before its deadline, or it
// could never be delivered. A deadline inside the window brings the due time
// forward, and an alert whose deadline would fall before the open batch's due
// time does not join it.
func TestDueBeforeDeadline(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			t0 := e.now()
			e.mustSend(t, contract.StatusQueued, "hostA", alert("a", 1), p)
			e.sched.take()
			short := alert("b", 2)
			short.ExpiresAt = t0 + 1000
			e.mustSend(t, contract.StatusQueued, "hostA", short, p)
			if diff := cmp.Diff([]int64{t0, t0 + 999}, ats(e.sched.take())); diff != "" {
				t.Errorf("due times (-want +got):\n%s", diff)
			}
		})
	}
}
