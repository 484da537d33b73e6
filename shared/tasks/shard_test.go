package tasks_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/tasks"
)

// TestShardMovesFewWhenQueuesAreAdded: going from n to n+1 queues moves
// about 1/(n+1) of the registrations, every one of them to the new queue,
// and going back moves the same ones back (issue 31 §4); FNV modulo n moved
// about n/(n+1).
func TestShardMovesFewWhenQueuesAreAdded(t *testing.T) {
	const regs = 10000
	for n := 1; n < 8; n++ {
		moved := 0
		for i := range regs {
			reg := fmt.Sprintf("5f0c1e2a-%04d-4f6e-9a43-1b2c3d4e5f60", i)
			before, after := tasks.Shard(reg, n), tasks.Shard(reg, n+1)
			if before == after {
				continue
			}
			moved++
			if after != n {
				t.Fatalf("%s moved from queue %d to %d going from %d to %d queues, want to the new queue %d", reg, before, after, n, n+1, n)
			}
		}
		// 1/(n+1) of the registrations, within a fifth of it either way.
		want := regs / (n + 1)
		if moved < want*4/5 || moved > want*6/5 {
			t.Errorf("going from %d to %d queues moved %d of %d registrations, want about %d", n, n+1, moved, regs, want)
		}
	}
}

// TestShardIsStable pins the hash: a registration's queue must not move
// between releases, or a deploy would split one phone's tasks over two
// queues.
func TestShardIsStable(t *testing.T) {
	got := []int{tasks.Shard("reg-a", 3), tasks.Shard("reg-b", 3), tasks.Shard("5f0c1e2a-0d4b-4f6e-9a43-1b2c3d4e5f60", 3),
		tasks.Shard("reg-a", 1)}
	if diff := cmp.Diff([]int{2, 0, 0, 0}, got); diff != "" {
		t.Fatalf("Shard (-want +got):\n%s", diff)
	}
	counts := make([]int, 4)
	for i := range 4000 {
		counts[tasks.Shard(fmt.Sprintf("reg-%d", i), 4)]++
	}
	for q, n := range counts {
		if n < 800 || n > 1200 {
			t.Fatalf("queue %d holds %d of 4000 registrations, want about 1000 (%v)", q, n, counts)
		}
	}
}

// TestScheduleSpreadsByRegistration: every task of one registration goes to
// its shard's queue, its retries and wake-ups too, and the queues together
// carry every registration.
func TestScheduleSpreadsByRegistration(t *testing.T) {
	queues := []string{queue, queue + "-01", queue + "-02"}
	ev := mustEnvWith(t, "", "", queues)
	used := map[string]bool{}
	for i := range 30 {
		reg := fmt.Sprintf("reg-%d", i)
		for j, key := range []string{"", "", "lease-1"} {
			if err := ev.sched.Schedule(t.Context(), fmt.Sprintf("b-%d", i), reg, start.Add(timeMs(j)), key); err != nil {
				t.Fatal(err)
			}
		}
		want := queues[tasks.Shard(reg, len(queues))]
		used[want] = true
		n := 0
		for _, task := range ev.emu.Tasks() {
			if strings.Contains(task.Body, fmt.Sprintf(`"b-%d"`, i)) {
				n++
				if q, _, _ := strings.Cut(task.Name, "/tasks/"); q != want {
					t.Fatalf("a task of %s is on %s, want %s", reg, q, want)
				}
			}
		}
		if n != 3 {
			t.Fatalf("%d tasks of %s, want 3", n, reg)
		}
	}
	if len(used) != 3 {
		t.Fatalf("30 registrations used %d of 3 queues", len(used))
	}
}

// TestCheckQueues holds what ORCA_PUSH_TASKS_QUEUE may list.
func TestCheckQueues(t *testing.T) {
	if got := tasks.ParseQueues(" " + queue + " , " + queue + "-01 "); !cmp.Equal(got, []string{queue, queue + "-01"}) {
		t.Fatalf("ParseQueues = %q", got)
	}
	if got := tasks.ParseQueues(" "); got != nil {
		t.Fatalf("ParseQueues of blank = %q, want none", got)
	}
	many := make([]string, tasks.MaxQueues+1)
	for i := range many {
		many[i] = fmt.Sprintf("%s-%02d", queue, i)
	}
	for _, qs := range [][]string{nil, {queue, queue}, {queue, "deliver"}, many} {
		if err := tasks.CheckQueues(qs); err == nil {
			t.Errorf("CheckQueues(%d queues %q...) = nil, want an error", len(qs), qs[:min(len(qs), 2)])
		}
	}
	if err := tasks.CheckQueues(many[:tasks.MaxQueues]); err != nil {
		t.Errorf("CheckQueues(%d queues) = %v", tasks.MaxQueues, err)
	}
}

func timeMs(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestQueueChangeDrains: tasks a gateway put on its one queue still run
// after it spreads tasks over three (the first keeps its name), and the
// same batch's next task goes to its registration's new queue.
func TestQueueChangeDrains(t *testing.T) {
	ev := mustEnv(t, "", "")
	queues := []string{queue, queue + "-01", queue + "-02"}
	wide, err := tasks.New(t.Context(), tasks.Options{Queues: queues, DeliverURL: ev.url, ClientOptions: ev.clientOpts})
	if err != nil {
		t.Fatal(err)
	}
	defer wide.Close()
	// A registration the three queues put elsewhere than the first.
	reg := ""
	for i := 0; reg == ""; i++ {
		if r := fmt.Sprint("reg-", i); tasks.Shard(r, 3) != 0 {
			reg = r
		}
	}
	ev.mustSchedule(t, "b-old", start) // the one-queue gateway: the first queue
	if err := wide.Schedule(t.Context(), "b-old", reg, start.Add(time.Second), ""); err != nil {
		t.Fatal(err)
	}
	byQueue := map[string]int{}
	for _, task := range ev.emu.Tasks() {
		q, _, _ := strings.Cut(task.Name, "/tasks/")
		byQueue[q]++
	}
	want := map[string]int{queue: 1, queues[tasks.Shard(reg, 3)]: 1}
	if diff := cmp.Diff(want, byQueue); diff != "" {
		t.Fatalf("tasks by queue (-want +got):\n%s", diff)
	}
	ev.clk.Advance(time.Second)
	if n, err := ev.emu.RunDue(t.Context()); err != nil || n != 2 {
		t.Fatalf("RunDue = %d, %v; want both tasks dispatched", n, err)
	}
	if n := len(ev.emu.Tasks()); n != 0 {
		t.Fatalf("%d tasks left, want none", n)
	}
}
