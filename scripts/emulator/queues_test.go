package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store/storetest"
	"onorca.dev/push/shared/tasks"
	"onorca.dev/push/shared/tasks/taskemu"
)

// TestQueuesShareTheLoad drives the emulator's queues as the real ones
// behave, on the manual clock with the 3 s window (every batch waits for its
// task) and 100 phones with one alert each: every task is on the queue its
// registration hashes to, and each queue dispatches 20 a second, so one
// queue delivers 20 a second (100 in 5 s) and four about 80 (100 in 2 s).
func TestQueuesShareTheLoad(t *testing.T) {
	const phones, rate = 100, 20
	for _, d := range storetest.Dialects(t) {
		for _, n := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d", d.Name, n), func(t *testing.T) {
				e := startEmuWith(t, d, queueOptions{count: n, rate: rate})
				want := map[string]int{}
				for _, q := range localQueues(n) {
					want[q] = 0
				}
				for i := range phones {
					if i%50 == 0 && i > 0 { // 64 registrations a host at most
						e.host = e.otherHost()
					}
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
				e.advance(3000)
				var perSecond []int
				for sec := 1; ; sec++ {
					// After sec seconds each queue has sent its first
					// rate × sec tasks.
					wantSoFar := 0
					for _, c := range want {
						wantSoFar += min(c, rate*sec)
					}
					got := delivered()
					if got != wantSoFar {
						t.Fatalf("%d delivered after %d s, want %d (%v)", got, sec, wantSoFar, want)
					}
					perSecond = append(perSecond, got)
					if got == phones {
						break
					}
					e.advance(1000)
				}
				if secs := len(perSecond); (n == 1 && secs != 5) || (n == 4 && secs > 2) {
					t.Fatalf("%d queues delivered %v by second, want 20 a second from one, about 80 from four", n, perSecond)
				}
				t.Logf("%d queues at %d/s: delivered by second %v", n, rate, perSecond)
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
	// One data directory for both processes: it holds the payload key
	// that sealed the waiting alerts.
	env := []string{"ORCA_PUSH_DATABASE_URL=" + pg.Options(t).DatabaseURL, "ORCA_PUSH_MANUAL_CLOCK=1",
		"ORCA_PUSH_DATA_DIR=" + t.TempDir()}
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

// pendingTasks returns the emulator's pending tasks by batch id: the queue
// of each of the batch's tasks.
func (e *emu) pendingTasks() map[string][]string {
	e.t.Helper()
	var pending struct{ Tasks []taskemu.TaskInfo }
	e.call("GET", "/_emulator/tasks", "", &pending)
	out := map[string][]string{}
	for _, task := range pending.Tasks {
		req, err := tasks.ParseDeliverRequest([]byte(task.Body))
		if err != nil {
			e.t.Fatalf("task %s: %v", task.Name, err)
		}
		q, _, _ := strings.Cut(task.Name, "/tasks/")
		out[req.BatchID] = append(out[req.BatchID], q)
	}
	return out
}

// TestRetryGoesToItsBatchsQueue: a batch's retry goes to the queue its
// first task was on, its registration's (issue 31 §4): over four queues,
// eight phones whose first attempt APNs answers 500.
func TestRetryGoesToItsBatchsQueue(t *testing.T) {
	const phones, queues = 8, 4
	e := startEmuWith(t, storetest.Dialects(t)[0], queueOptions{count: queues})
	batchOf := map[string]string{} // registration => batch
	for b, reg := range e.alertNewPhones(phones) {
		batchOf[reg] = b
	}
	first := e.pendingTasks()
	for reg, b := range batchOf {
		if want := localQueues(queues)[tasks.Shard(reg, queues)]; !cmp.Equal(first[b], []string{want}) {
			t.Fatalf("the first task of %s is on %v, want %s", reg, first[b], want)
		}
	}
	e.fault(fmt.Sprintf(`{"provider":"apns","token":"*","status":500,"reason":"InternalServerError","times":%d}`, phones))
	e.advance(3000) // the window: every first attempt is refused
	retries := e.pendingTasks()
	if len(retries) != phones {
		t.Fatalf("%d batches have a task after the refusals, want %d retries (%v)", len(retries), phones, retries)
	}
	for reg, b := range batchOf {
		if !cmp.Equal(retries[b], first[b]) {
			t.Errorf("the retry of %s's batch is on %v, want its first task's queue %v", reg, retries[b], first[b])
		}
	}
}

// TestQueueListChangeDeliversOnce: while a queue list change rolls out,
// instances of the old list (two queues) and of the new one (four) both put
// tasks of the same batches on the queues they hash to; the tasks live on
// the old and the new queues at once, and each phone gets its alert once
// (the batch's claim), with no task left (issue 31 §4).
func TestQueueListChangeDeliversOnce(t *testing.T) {
	const phones = 8
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmuWith(t, d, queueOptions{count: 4})
			old, err := tasks.New(t.Context(), tasks.Options{Queues: localQueues(2), DeliverURL: e.srv.URL + deliverPath,
				ClientOptions: e.em.local.tasksClient})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { old.Close() })
			regs := e.alertNewPhones(phones) // batch => registration
			// An instance of the old list schedules each batch again at
			// its due time, as its retry or the sweep's re-enqueue would.
			due := e.clk.Now().Add(3 * time.Second)
			for b, reg := range regs {
				if err := old.Schedule(t.Context(), b, reg, due, ""); err != nil {
					t.Fatal(err)
				}
			}
			// A batch whose queue the change kept has one task (the same
			// name on the same queue); the others have one on each.
			split := 0
			for b, qs := range e.pendingTasks() {
				want := []string{localQueues(4)[tasks.Shard(regs[b], 4)]}
				if q := localQueues(2)[tasks.Shard(regs[b], 2)]; q != want[0] {
					want = append(want, q)
					split++
				}
				if diff := cmp.Diff(want, qs, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
					t.Fatalf("tasks of batch %s by queue (-want +got):\n%s", b, diff)
				}
			}
			if split == 0 {
				t.Fatalf("no batch has tasks on two queues: the test tests nothing")
			}
			e.advance(3000)
			// A task that met its batch claimed by the other's delivery
			// came back for after the claim's lease: let it run.
			e.advance(contract.LeaseDuration.Milliseconds())
			got := map[string]int{}
			for _, d := range e.inbox() {
				if d.Status == http.StatusOK {
					got[d.Path]++
				}
			}
			if len(got) != phones {
				t.Fatalf("%d phones got their alert, want %d (%v)", len(got), phones, got)
			}
			for path, n := range got {
				if n != 1 {
					t.Errorf("%s got %d pushes, want 1", path, n)
				}
			}
			if left := e.pendingTasks(); len(left) != 0 {
				t.Errorf("tasks left: %v, want none", left)
			}
			t.Logf("%d of %d batches had tasks on two queues", split, phones)
		})
	}
}

// alertNewPhones registers n phones and sends each an alert of its own,
// and returns the batch each alert opened, by batch id, with its
// registration: the batch is the one whose task the send added.
func (e *emu) alertNewPhones(n int) map[string]string {
	regs := map[string]string{}
	for i := range n {
		reg, _ := e.registerPhone(fmt.Sprint("phone-", i))
		before := e.pendingTasks()
		e.sendTo(alert(fmt.Sprint("n", i), int64(i+1)), reg)
		for b := range e.pendingTasks() {
			if _, ok := before[b]; !ok {
				regs[b] = reg
			}
		}
	}
	return regs
}
