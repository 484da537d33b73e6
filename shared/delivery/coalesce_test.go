package delivery_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/store/storetest"
)

const window = int64(contract.DefaultCoalesce / time.Millisecond)

// TestCoalesceWindow: the window is fixed by the first alert; an alert
// 2999 ms later joins, one 3000 ms later opens a new batch
// (reference-behaviour §5.1).
func TestCoalesceWindow(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			t0 := e.now()
			e.mustSend(t, contract.StatusQueued, "hostA", alert("a", 1), p)
			first := e.sched.take()
			if len(first) != 1 || first[0].At != t0+window {
				t.Fatalf("scheduled %v, want one batch at t0+%d", first, window)
			}
			e.clock.Advance(time.Duration(window-1) * time.Millisecond)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("b", 2), p)
			if calls := e.sched.take(); len(calls) != 0 {
				t.Fatalf("a join scheduled %v, want nothing", calls)
			}
			e.clock.Advance(time.Millisecond)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("c", 3), p)
			if diff := cmp.Diff([]int64{t0 + 2*window}, ats(e.sched.take())); diff != "" {
				t.Fatalf("scheduled at (-want +got):\n%s", diff)
			}
			b := e.batch(t, first[0].BatchID)
			if b.DueAt != t0+window || b.Members != 2 || b.ScheduledAt != t0 {
				t.Errorf("first batch due %d, %d members, scheduled %d; want t0+%d, 2, t0", b.DueAt-t0, b.Members, b.ScheduledAt-t0, window)
			}
			if diff := cmp.Diff([]int64{1, 2}, seqs(e.members(t, b.ID))); diff != "" {
				t.Errorf("first batch seqs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCoalesce33: 32 alerts fill a batch; the 33rd makes it due now and opens
// the next.
func TestCoalesce33(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			now := e.now()
			for i := range contract.MaxBatchMembers + 1 {
				e.mustSend(t, contract.StatusQueued, "hostA", alert(fmt.Sprintf("n%d", i), int64(i)), p)
			}
			// The first batch was scheduled when it opened and again, due
			// now, when the 33rd alert found it full.
			calls := e.sched.take()
			if diff := cmp.Diff([]int64{now, now + window, now + window}, ats(calls)); diff != "" {
				t.Fatalf("scheduled at (-want +got):\n%s", diff)
			}
			full, next := calls[0].BatchID, calls[1].BatchID
			if next == full {
				next = calls[2].BatchID
			}
			mustBatchOf(t, e, full, contract.MaxBatchMembers, now)
			mustBatchOf(t, e, next, 1, now+window)
		})
	}
}

// mustBatchOf checks a pending batch's size, its members column and due time.
func mustBatchOf(t *testing.T, e *env, id string, members int, dueAt int64) {
	t.Helper()
	b := e.batch(t, id)
	if got := len(e.members(t, id)); b.Members != members || got != members || b.DueAt != dueAt {
		t.Errorf("batch has members column %d, %d in payload, due %d; want %d, %d, %d",
			b.Members, got, b.DueAt, members, members, dueAt)
	}
}

// TestCoalesceAlertWithoutID: an alert without a notificationId never joins
// and is never joined; it flushes the open batch it meets.
func TestCoalesceAlertWithoutID(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			now := e.now()
			e.mustSend(t, contract.StatusQueued, "hostA", alert("a", 1), p)
			first := e.sched.take()[0].BatchID
			e.mustSend(t, contract.StatusQueued, "hostA", bell(2), p)
			flushed := e.sched.take()
			if len(flushed) != 2 || flushed[0] != (call{first, now, ""}) || flushed[1].At != now+window {
				t.Fatalf("after a bell scheduled %v, want %s now and a new batch at now+%d", flushed, first, window)
			}
			e.mustSend(t, contract.StatusQueued, "hostA", alert("b", 3), p)
			again := e.sched.take()
			if len(again) != 2 || again[0] != (call{flushed[1].BatchID, now, ""}) {
				t.Fatalf("after an alert scheduled %v, want the bell's batch now and a new one", again)
			}
			for _, c := range []call{flushed[0], flushed[1], again[1]} {
				if m := e.batch(t, c.BatchID).Members; m != 1 {
					t.Errorf("batch %s has %d members, want 1", c.BatchID, m)
				}
			}
		})
	}
}

// TestCoalescePayloadsFit is the partition test of reference-behaviour §5.2:
// 72 alerts, two of them with 1800-character ids, split into batches whose
// real provider payloads (push.Build, apns.Body, fcm.Size) all fit
// contract.MaxProviderPayload, whose summaries list every member, and which
// together hold every alert once, in order. A run of long ids splits
// batches before 32 members.
func TestCoalescePayloadsFit(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			var want []int64
			for i := range 72 {
				id := fmt.Sprintf("agent-%d", i)
				if i == 20 || i == 21 {
					id = strings.Repeat(string(rune('a'+i%2)), 1800)
				}
				if i >= 40 && i < 70 {
					id = fmt.Sprintf("%s-%0200d", id, i)
				}
				n := alert(id, int64(i))
				if i%5 == 0 {
					n.AgentState = contract.AgentNeedsInput
				}
				e.mustSend(t, contract.StatusQueued, "hostA", n, p)
				want = append(want, int64(i))
			}
			var got []int64
			var sizes []int
			batches := batchIDs(e.sched.take())
			for _, id := range batches {
				b := e.batch(t, id)
				members := e.members(t, id)
				sizes = append(sizes, len(members))
				if len(members) != b.Members {
					t.Errorf("batch %s: members column %d, payload %d", id, b.Members, len(members))
				}
				m := push.Build("hostA", members, b.ExpiresAt)
				if n := len(apns.Body(m)); n > contract.MaxProviderPayload {
					t.Errorf("batch of %d: APNs body %d bytes", len(members), n)
				}
				if n := fcm.Size(m); n > contract.MaxProviderPayload {
					t.Errorf("batch of %d: FCM message %d bytes", len(members), n)
				}
				if len(members) > 1 && len(m.SummaryMembers) != len(members) {
					t.Errorf("batch of %d lists %d summary members", len(members), len(m.SummaryMembers))
				}
				got = append(got, seqs(members)...)
			}
			t.Logf("batch sizes %v", sizes)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("sequences delivered (-want +got):\n%s", diff)
			}
			if len(batches) <= 72/contract.MaxBatchMembers+1 {
				t.Errorf("%d batches: long ids split none", len(batches))
			}
		})
	}
}

// ats returns the due times of calls.
func ats(calls []call) []int64 {
	var out []int64
	for _, c := range calls {
		out = append(out, c.At)
	}
	return out
}

// batchIDs returns the distinct batch ids of calls in creation order of
// their first call.
func batchIDs(calls []call) []string {
	var out []string
	for _, c := range calls {
		if !slices.Contains(out, c.BatchID) {
			out = append(out, c.BatchID)
		}
	}
	return out
}

// seqs returns the sequence numbers of members.
func seqs(members []contract.Notification) []int64 {
	out := make([]int64, len(members))
	for i, n := range members {
		out[i] = n.Seq
	}
	return out
}

// TestJoinsOfOneSend: a send to three phones that each have an open batch
// joins all three (in one statement on PostgreSQL, store.Tx.JoinBatches):
// each batch holds both alerts, keeps its due time and takes the joining
// alert's earlier deadline.
func TestJoinsOfOneSend(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			regs := []string{e.device(t, "hostA", "a"), e.device(t, "hostA", "b"), e.device(t, "hostA", "c")}
			t0 := e.now()
			e.mustSend(t, contract.StatusQueued, "hostA", alert("n1", 1), regs...)
			opened := e.sched.take()
			if len(opened) != 3 {
				t.Fatalf("scheduled %v, want three batches", opened)
			}
			e.clock.Advance(time.Second)
			second := alert("n2", 2)
			second.ExpiresAt = e.now() + 20_000
			e.mustSend(t, contract.StatusQueued, "hostA", second, regs...)
			if calls := e.sched.take(); len(calls) != 0 {
				t.Fatalf("the joins scheduled %v, want nothing", calls)
			}
			for _, c := range opened {
				b := e.batch(t, c.BatchID)
				if b.Members != 2 || b.DueAt != t0+window || b.ExpiresAt != second.ExpiresAt {
					t.Errorf("batch %s: %d members, due t0+%d, expires %d; want 2, t0+%d, %d",
						b.ID, b.Members, b.DueAt-t0, b.ExpiresAt, window, second.ExpiresAt)
				}
				if diff := cmp.Diff([]int64{1, 2}, seqs(e.members(t, b.ID))); diff != "" {
					t.Errorf("batch %s seqs (-want +got):\n%s", b.ID, diff)
				}
			}
		})
	}
}
