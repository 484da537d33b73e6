package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// longID is a notificationId of about 1800 characters: two of them cannot
// share a batch within the provider's 4 KB, so a burst holding them splits.
func longID(tag string) string { return tag + "-" + strings.Repeat("x", 1800) }

// burst sends count alerts to reg at one instant, the ones at the indexes in
// long with a long notificationId, and returns their ids in order.
func (e *emu) burst(reg string, count int, long ...int) []string {
	e.t.Helper()
	var ids []string
	for i := range count {
		id := fmt.Sprintf("a%02d", i)
		if slices.Contains(long, i) {
			id = longID(id)
		}
		n := alert(id, int64(1000+i))
		n.Body = fmt.Sprintf("build %d", i)
		if s := e.send(reg, n); s != contract.StatusQueued {
			e.t.Fatalf("send %d = %s", i, s)
		}
		ids = append(ids, id)
	}
	return ids
}

// acceptedIDs returns the notificationIds the stand-in accepted, summary
// members one by one, in arrival order.
func (e *emu) acceptedIDs() []string {
	e.t.Helper()
	var ids []string
	for _, d := range e.inbox() {
		if d.Status == 200 {
			ids = append(ids, deliveredIDs(e.t, d)...)
		}
	}
	return ids
}

// pendingBatches counts the batches still waiting for delivery.
func (e *emu) pendingBatches() int64 {
	e.t.Helper()
	n, err := e.em.svc.Store.BatchStates(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	return n[store.BatchPending]
}

// TestHeldBackBatchesGoTogether: when several batches of one registration
// fall due at once, one is in flight at a time and each of the others goes
// as soon as the one before it finishes: one run of the due tasks sends
// them all, on both databases. Forty alerts with two 1800-character ids
// make three batches due at the window's end, the last holding the 40th
// alert.
func TestHeldBackBatchesGoTogether(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			reg := e.registerIOS("phone")
			ids := e.burst(reg, 40, 10, 25)
			e.advance(contract.DefaultCoalesce.Milliseconds())
			if got := e.acceptedIDs(); !sameSet(got, ids) {
				t.Fatalf("after one run of the due tasks the stand-in accepted %d of the 40 alerts (%d deliveries), want all",
					len(got), len(e.inbox()))
			}
			if n := e.pendingBatches(); n != 0 {
				t.Fatalf("%d batches still pending, want none", n)
			}
		})
	}
}

// TestDismissalBehindItsAlert: an alert and its dismissal due together go
// one after the other in the same run, the alert first: the dismissal waits
// for the alert in flight rather than overtaking it.
func TestDismissalBehindItsAlert(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			reg := e.registerIOS("phone")
			e.send(reg, alert("first", 1))
			e.advance(contract.DefaultCoalesce.Milliseconds() - 1)
			// Hold the alert's delivery back until the dismissal of
			// another notification is due too, then run both.
			dismiss := alert("other", 2)
			dismiss.Kind = contract.KindDismiss
			e.send(reg, dismiss)
			e.advance(1)
			in := e.inbox()
			if len(in) != 2 {
				t.Fatalf("got %d deliveries in one run, want the alert and the dismissal", len(in))
			}
			if n := e.pendingBatches(); n != 0 {
				t.Fatalf("%d batches still pending, want none", n)
			}
		})
	}
}

// sameSet reports whether a and b hold the same strings, each once.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestHeldBackBatchesGoTogetherProcess is TestHeldBackBatchesGoTogether
// against the emulator as a person runs it (its own process, the manual
// clock, SQLite and PostgreSQL): one move past the window and one run of the
// due tasks deliver all forty alerts.
func TestHeldBackBatchesGoTogetherProcess(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, e *liveEmulator) {
		reg := e.phone(t, "phone")
		var ids []string
		for i := range 40 {
			id := fmt.Sprintf("a%02d", i)
			if i == 10 || i == 25 {
				id = longID(id)
			}
			n := alert(id, int64(1000+i))
			n.Body = "build"
			e.send(t, n, reg)
			ids = append(ids, id)
		}
		emulatortest.Control(t, e.p.origin, "POST", "/_emulator/clock",
			fmt.Sprintf(`{"advanceMs":%d}`, contract.DefaultCoalesce.Milliseconds()), nil)
		emulatortest.Control(t, e.p.origin, "POST", "/_emulator/tasks/run-due", "", nil)
		var got []string
		for _, d := range processInbox(t, e.p.origin) {
			if d.Status == 200 {
				got = append(got, deliveredIDs(t, d)...)
			}
		}
		if !sameSet(got, ids) {
			t.Fatalf("after one run of the due tasks the stand-in accepted %d of the 40 alerts, want all", len(got))
		}
	}, "ORCA_PUSH_MANUAL_CLOCK=1")
}
