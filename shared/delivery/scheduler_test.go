package delivery_test

import (
	"fmt"
	"slices"
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

// TestShortDeadlines: an alert accepted with time left is due while it still
// has it. A batch is due no later than contract.DispatchMargin before its
// deadline, at once when less is left, and an alert whose deadline would
// pull an open batch's deadline below its due time plus the margin opens a
// batch of its own instead of joining (decisions table, "short deadlines").
// The due times are pinned in milliseconds after t0, so a margin of one
// millisecond (the old rule: deadline − 1) fails here.
func TestShortDeadlines(t *testing.T) {
	type alertAt struct {
		phone int   // which of the test's phones
		life  int64 // expiresAt − t0 in ms; 0: the default life
	}
	tests := []struct {
		name   string
		alerts []alertAt
		// want is every batch as (phone, due − t0, deadline − t0,
		// members), in creation order.
		want []batchAt
	}{
		{"a deadline inside the window is due a margin before it",
			[]alertAt{{0, 1000}},
			[]batchAt{{0, 500, 1000, 1}}},
		{"less than the margin left is due at once",
			[]alertAt{{0, 300}, {1, 500}},
			[]batchAt{{0, 0, 300, 1}, {1, 0, 500, 1}}},
		{"five short-lived alerts share one batch due before the first deadline",
			[]alertAt{{0, 1000}, {0, 2000}, {0, 2900}, {0, 3500}, {0, 5000}},
			[]batchAt{{0, 500, 1000, 5}}},
		{"one at a time, each is due a margin before its deadline",
			[]alertAt{{0, 500}, {1, 1000}, {2, 1500}, {3, 2000}, {4, 2500}, {5, 3100}, {6, 3600}},
			[]batchAt{{0, 0, 500, 1}, {1, 500, 1000, 1}, {2, 1000, 1500, 1}, {3, 1500, 2000, 1},
				{4, 2000, 2500, 1}, {5, 2600, 3100, 1}, {6, 3000, 3600, 1}}},
		{"a short-lived alert never shortens the open batch: it is flushed and the alert waits alone",
			[]alertAt{{0, 0}, {0, 3005}},
			[]batchAt{{0, 0, 300000, 1}, {0, 2505, 3005, 1}}},
		{"an alert that leaves the open batch its margin joins it",
			[]alertAt{{0, 0}, {0, 3500}},
			[]batchAt{{0, 3000, 3500, 2}}},
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					e := mustEnv(t, d)
					var phones []string
					for i := range 7 {
						phones = append(phones, e.device(t, "hostA", fmt.Sprintf("phone%d", i)))
					}
					t0 := e.now()
					var ids []string
					for i, a := range tt.alerts {
						n := alert(fmt.Sprintf("n%d", i), int64(i+1))
						if a.life != 0 {
							n.ExpiresAt = t0 + a.life
						}
						e.mustSend(t, contract.StatusQueued, "hostA", n, phones[a.phone])
						for _, c := range e.sched.take() {
							if !slices.Contains(ids, c.BatchID) {
								ids = append(ids, c.BatchID)
							}
						}
					}
					var got []batchAt
					for _, id := range ids {
						b := e.batch(t, id)
						got = append(got, batchAt{slices.Index(phones, b.RegistrationID), b.DueAt - t0, b.ExpiresAt - t0, b.Members})
					}
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("batches (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// batchAt is a batch as TestShortDeadlines sees it: its phone's index, its
// due time and deadline relative to t0, its member count.
type batchAt struct {
	Phone         int
	Due, Deadline int64
	Members       int
}
