package main

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/store/storetest"
	"onorca.dev/push/shared/tasks"
)

// TestQueuesShareTheLoad drives the emulator's queues as the real ones
// behave, on the manual clock with the 3 s window (every batch waits for its
// task) and 40 phones with one alert each: every task is on the queue its
// registration hashes to; one queue at 20 dispatches a second delivers 20 in
// the first second and the rest in the next, and four queues deliver all 40
// in the first.
func TestQueuesShareTheLoad(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		for _, n := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d", d.Name, n), func(t *testing.T) {
				e := startEmuWith(t, d, queueOptions{count: n, rate: 20})
				want := map[string]int{}
				for _, q := range localQueues(n) {
					want[q] = 0
				}
				for i := range 40 {
					reg, _ := e.registerPhone(fmt.Sprint("phone-", i))
					e.sendTo(alert(fmt.Sprint("n", i), int64(i+1)), reg)
					want[localQueues(n)[tasks.Shard(reg, n)]]++
				}
				var pending struct{ Queues map[string]int }
				e.call("GET", "/_emulator/tasks", "", &pending)
				if diff := cmp.Diff(want, pending.Queues); diff != "" {
					t.Fatalf("pending tasks by queue (-want +got):\n%s", diff)
				}
				delivered := func() int {
					n := 0
					for _, d := range e.inbox() {
						if d.Status == http.StatusOK {
							n++
						}
					}
					return n
				}
				first := 0
				for _, c := range want {
					first += min(c, 20)
				}
				e.advance(3000)
				if got := delivered(); got != first {
					t.Fatalf("%d delivered in the first second, want %d (%v)", got, first, want)
				}
				e.advance(1000)
				if got := delivered(); got != 40 {
					t.Fatalf("%d delivered after two seconds, want 40", got)
				}
			})
		}
	}
}

// TestQueuesThroughTheProcess: -queues and -queue-rate shape the emulator
// process's queues, and GET /_emulator/tasks says what each holds.
func TestQueuesThroughTheProcess(t *testing.T) {
	p := startEmulatorWith(t, emulatortest.FreePort("-queues", "4", "-queue-rate", "20"), "ORCA_PUSH_MANUAL_CLOCK=1")
	e := newLiveEmulator(t, p)
	want := map[string]int{}
	for _, q := range localQueues(4) {
		want[q] = 0
	}
	for i := range 12 {
		reg := e.phone(t, fmt.Sprint("phone-", i))
		e.send(t, alert(fmt.Sprint("n", i), int64(i+1)), reg)
		want[localQueues(4)[tasks.Shard(reg, 4)]]++
	}
	var pending struct{ Queues map[string]int }
	emulatortest.Control(t, p.origin, "GET", "/_emulator/tasks", "", &pending)
	if diff := cmp.Diff(want, pending.Queues); diff != "" {
		t.Fatalf("pending tasks by queue (-want +got):\n%s", diff)
	}
}

// TestQueueCountChangeLosesNothing restarts the gateway with four queues
// where it had one, on the same PostgreSQL, with alerts waiting for their
// window: the tasks the first process made are gone with it (an emulator's
// queue lives in its memory; a real one keeps them and drains), and the new
// process's sweep hands the batches to its four queues. Every alert is
// delivered once.
func TestQueueCountChangeLosesNothing(t *testing.T) {
	pg := storetest.Postgres(t)
	env := []string{"ORCA_PUSH_DATABASE_URL=" + pg.Options(t).DatabaseURL, "ORCA_PUSH_MANUAL_CLOCK=1"}
	p1 := startEmulatorWith(t, emulatortest.FreePort("-queues", "1"), env...)
	e := newLiveEmulator(t, p1)
	var regs []string
	for i := range 8 {
		reg := e.phone(t, fmt.Sprint("phone-", i))
		regs = append(regs, reg)
		e.send(t, alert(fmt.Sprint("n", i), int64(i+1)), reg)
	}
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p1.cmd.Wait()

	p2 := startEmulatorWith(t, emulatortest.FreePort("-queues", "4"), env...)
	for range 2 { // past the window and the sweep's grace; sweeps run each minute
		emulatortest.Control(t, p2.origin, "POST", "/_emulator/clock", `{"advanceMs":61000}`, nil)
		emulatortest.Control(t, p2.origin, "POST", "/_emulator/tasks/run-due", "", nil)
	}
	got := map[string]int{}
	for _, d := range processInbox(t, p2.origin) {
		if d.Status == http.StatusOK {
			got[d.Path]++
		}
	}
	if len(got) != len(regs) {
		t.Fatalf("%d phones got their alert after the restart, want %d (%v)", len(got), len(regs), got)
	}
	for path, n := range got {
		if n != 1 {
			t.Fatalf("%s got %d pushes, want 1", path, n)
		}
	}
}
