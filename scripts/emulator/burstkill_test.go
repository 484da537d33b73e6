package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/contract"
)

// TestKilledMidBurst: five alerts sent together to one iPhone with inline
// delivery (no coalescing); the first to claim the registration hangs in
// its provider call, the others are held back behind it, with no task for
// any of them. The process is killed there. The new process's sweep finds
// the batches once the lease and the grace have passed, and every alert is
// delivered, none twice.
func TestKilledMidBurst(t *testing.T) {
	env, p1, h, reg := startInlineWithIPhone(t)
	ctx := context.Background()
	emulatortest.Control(t, p1.origin, "POST", "/_emulator/faults", `{"provider":"apns","token":"*","hang":true,"times":100}`, nil)
	const n = 5
	var ids []string
	var answered atomic.Int64
	for i := range n {
		id := fmt.Sprintf("burst-%d", i)
		ids = append(ids, id)
		go func() {
			if _, err := h.Send(ctx, []string{reg}, contract.Notification{NotificationID: id, Seq: int64(i + 1), Epoch: "e",
				Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished, Title: "Done", Body: id}); err == nil {
				answered.Add(1)
			}
		}()
	}
	// Crossing a process boundary: the held-back sends answer at once, the
	// one in the provider call does not.
	for deadline := time.Now().Add(10 * time.Second); answered.Load() < n-1 || len(processInbox(t, p1.origin)) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d sends answered, want %d before the kill", answered.Load(), n-1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p1.cmd.Wait()

	p2 := startEmulator(t, env...)
	for range 3 { // sweeps run each minute
		emulatortest.Control(t, p2.origin, "POST", "/_emulator/clock", `{"advanceMs":61000}`, nil)
		emulatortest.Control(t, p2.origin, "POST", "/_emulator/tasks/run-due", "", nil)
	}
	var got []string
	for _, d := range processInbox(t, p2.origin) {
		if d.Status == http.StatusOK {
			got = append(got, deliveredIDs(t, d)...)
		}
	}
	if !sameSet(got, ids) {
		t.Fatalf("after the restart the stand-in accepted %q, want each of %q once", got, ids)
	}
}
