package taskemu_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/tasks/taskemu"
)

// TestUsageCountsEveryOperation holds the billing count: each API call
// (refused ones too) and each dispatch attempt, a retry's included.
func TestUsageCountsEveryOperation(t *testing.T) {
	e, c, clk := mustManual(t, taskemu.RetryConfig{MinBackoff: time.Second, MaxBackoff: time.Second})
	tg := mustTarget(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		if i == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mustCreate(t, c, httpTask("a", tg.URL, "a", start))
	mustCreate(t, c, httpTask("b", tg.URL, "b", start.Add(time.Hour)))
	e.FailCreates(1, codes.Unavailable)
	if _, err := c.CreateTask(t.Context(), httpTask("c", tg.URL, "c", start)); err == nil {
		t.Fatal("CreateTask succeeded, want the injected failure")
	}
	mustRunDue(t, e, 1) // a fails
	clk.Advance(time.Second)
	mustRunDue(t, e, 1) // a's retry
	if _, err := c.GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: queue + "/tasks/b"}); err != nil {
		t.Fatal(err)
	}
	it := c.ListTasks(t.Context(), &cloudtaskspb.ListTasksRequest{Parent: queue})
	for {
		if _, err := it.Next(); err == iterator.Done {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.RunTask(t.Context(), &cloudtaskspb.RunTaskRequest{Name: queue + "/tasks/b"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTask(t.Context(), &cloudtaskspb.DeleteTaskRequest{Name: queue + "/tasks/b"}); err == nil {
		t.Fatal("DeleteTask of a task that ran succeeded, want NotFound")
	}
	want := taskemu.Usage{Creates: 3, Gets: 1, Lists: 1, Runs: 1, Deletes: 1, Dispatches: 3}
	got := e.Usage()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Usage (-want +got):\n%s", diff)
	}
	if n := got.Operations(); n != 10 {
		t.Fatalf("Operations() = %d, want 10", n)
	}
}

// TestRateLimitsEachQueue holds Options.Rate: each queue dispatches at most
// Rate tasks a second of the clock (a burst of one second's worth), whatever
// the other queues do, and under a manual clock RunDue dispatches what the
// tokens allow and leaves the rest due.
func TestRateLimitsEachQueue(t *testing.T) {
	clk := clock.NewManual(start)
	e, c := mustStart(t, taskemu.Options{Clock: clk, Manual: true, Rate: 20})
	tg := mustTarget(t, ok)
	const other = "projects/p/locations/l/queues/q2"
	for i := range 30 {
		mustCreate(t, c, httpTask("", tg.URL, "a", start))
		if i < 5 {
			req := httpTask("", tg.URL, "b", start)
			req.Parent = other
			mustCreate(t, c, req)
		}
	}
	mustRunDue(t, e, 25) // 20 of the first queue, the other's 5
	mustRunDue(t, e, 0)  // no token came: the clock did not move
	clk.Advance(500 * time.Millisecond)
	mustRunDue(t, e, 10) // half a second: 10 tokens
	clk.Advance(time.Hour)
	mustRunDue(t, e, 0) // nothing left
	if n := len(tg.requests()); n != 35 {
		t.Fatalf("target got %d requests, want 35", n)
	}
	if _, err := taskemu.New(t.Context(), taskemu.Options{Clock: clk, HTTPClient: &http.Client{}, Rate: 501}); err == nil {
		t.Fatal("New accepted a rate over 500")
	}
}

// TestMaxConcurrentPerQueue holds Options.MaxConcurrent: a queue keeps at
// most that many attempts in flight, whatever is due, and the rest go as
// attempts end.
func TestMaxConcurrentPerQueue(t *testing.T) {
	clk := clock.NewManual(start)
	e, c := mustStart(t, taskemu.Options{Clock: clk, Manual: true, MaxConcurrent: 2})
	var mu sync.Mutex
	inFlight, most := 0, 0
	tg := mustTarget(t, func(int, http.ResponseWriter, *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // a real-time wait, so that attempts overlap if allowed
		mu.Lock()
		inFlight--
		mu.Unlock()
	})
	for range 10 {
		mustCreate(t, c, httpTask("", tg.URL, "a", start))
	}
	mustRunDue(t, e, 10)
	if most != 2 {
		t.Fatalf("at most %d attempts in flight, want 2", most)
	}
}
