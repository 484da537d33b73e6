package taskemu_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/tasks/taskemu"
)

func TestDispatchAtScheduleTime(t *testing.T) {
	e, c, clk := mustManual(t, taskemu.RetryConfig{})
	tg := mustTarget(t, ok)
	req := httpTask("t1", tg.URL+"/deliver", `{"batchId":"b"}`, start.Add(3*time.Second))
	req.Task.GetHttpRequest().AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{
		ServiceAccountEmail: "tasks@p.iam.gserviceaccount.com", Audience: "https://deliver.example"}}
	mustCreate(t, c, req)

	mustRunDue(t, e, 0)
	clk.Advance(2999 * time.Millisecond)
	mustRunDue(t, e, 0)
	if n := len(tg.requests()); n != 0 {
		t.Fatalf("target got %d requests before the schedule time, want 0", n)
	}
	clk.Advance(time.Millisecond)
	mustRunDue(t, e, 1)

	got := tg.requests()
	if len(got) != 1 {
		t.Fatalf("target got %d requests, want 1", len(got))
	}
	r := got[0]
	for _, h := range []struct{ name, want string }{
		{"Content-Type", "application/json"},
		{"Authorization", "Bearer " + taskemu.OIDCTokenPrefix + "https://deliver.example"},
		{"X-CloudTasks-QueueName", "q"},
		{"X-CloudTasks-TaskName", "t1"},
		{"X-CloudTasks-TaskRetryCount", "0"},
		{"User-Agent", "Google-Cloud-Tasks"},
	} {
		if v := r.Header.Get(h.name); v != h.want {
			t.Errorf("header %s = %q, want %q", h.name, v, h.want)
		}
	}
	if r.Method != http.MethodPost || r.Body != `{"batchId":"b"}` {
		t.Errorf("request = %s %q, want POST %q", r.Method, r.Body, `{"batchId":"b"}`)
	}
	if tasks := e.Tasks(); len(tasks) != 0 {
		t.Errorf("Tasks() after success = %v, want none", tasks)
	}
	_, err := c.CreateTask(t.Context(), httpTask("t1", tg.URL, "", clk.Now()))
	if got := status.Code(err); got != codes.AlreadyExists {
		t.Errorf("CreateTask(completed name) code = %v, want AlreadyExists", got)
	}
	clk.Advance(24 * time.Hour)
	mustCreate(t, c, httpTask("t1", tg.URL, "", clk.Now()))
}

func TestRetryBackoffThenDrop(t *testing.T) {
	e, c, clk := mustManual(t, taskemu.RetryConfig{MinBackoff: time.Second, MaxBackoff: 5 * time.Second, MaxAttempts: 5})
	tg := mustTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	task := mustCreate(t, c, httpTask("r", tg.URL, "x", start))

	// Waits of 1 s, 2 s, 4 s, then capped at 5 s; the fifth failure drops it.
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second} {
		mustRunDue(t, e, 1)
		mustRunDue(t, e, 0) // the retry is not due yet
		want := clk.Now().Add(wait)
		got, err := c.GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: task.GetName()})
		if err != nil {
			t.Fatalf("GetTask() after attempt %d error = %v", i+1, err)
		}
		if !got.GetScheduleTime().AsTime().Equal(want) || got.GetDispatchCount() != int32(i+1) ||
			got.GetResponseCount() != int32(i+1) || got.GetLastAttempt().GetResponseStatus().GetCode() != int32(codes.Internal) {
			t.Fatalf("after attempt %d: task = %v, want schedule %v, %d dispatches and responses, last status Internal", i+1, got, want, i+1)
		}
		if infos := e.Tasks(); len(infos) != 1 || infos[0].ScheduleTime != want.UnixMilli() || infos[0].LastStatus != 500 {
			t.Fatalf("after attempt %d: Tasks() = %+v, want schedule %d, last status 500", i+1, infos, want.UnixMilli())
		}
		clk.Advance(wait)
	}
	mustRunDue(t, e, 1)
	if infos := e.Tasks(); len(infos) != 0 {
		t.Errorf("Tasks() after the last attempt = %+v, want none", infos)
	}
	want := []taskemu.TaskInfo{{Name: task.GetName(), ScheduleTime: clk.Now().UnixMilli(), URL: tg.URL, Attempts: 5, LastStatus: 500, Body: "x"}}
	if diff := cmp.Diff(want, e.Failed()); diff != "" {
		t.Errorf("Failed() (-want +got):\n%s", diff)
	}
	if n := len(tg.requests()); n != 5 {
		t.Errorf("target got %d requests, want 5", n)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	e, c, clk := mustManual(t, taskemu.RetryConfig{})
	tg := mustTarget(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		if i == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mustCreate(t, c, httpTask("s", tg.URL, "", start))
	mustRunDue(t, e, 1)
	clk.Advance(taskemu.DefaultMinBackoff)
	mustRunDue(t, e, 1)
	got := tg.requests()
	if len(got) != 2 || got[1].Header.Get("X-CloudTasks-TaskRetryCount") != "1" || got[1].Header.Get("X-CloudTasks-TaskExecutionCount") != "1" {
		t.Fatalf("target requests = %+v, want 2, the second with retry and execution counts 1", got)
	}
	if infos := e.Tasks(); len(infos) != 0 {
		t.Errorf("Tasks() = %+v, want none", infos)
	}
}

func TestRunDueRunsTasksCreatedMeanwhile(t *testing.T) {
	e, c, clk := mustManual(t, taskemu.RetryConfig{})
	var tg *target
	tg = mustTarget(t, func(i int, w http.ResponseWriter, r *http.Request) {
		if i > 0 {
			return
		}
		// The first task schedules one due now and one due later, as deliver
		// schedules retries.
		for _, req := range []*cloudtaskspb.CreateTaskRequest{
			httpTask("now", tg.URL, "", clk.Now()),
			httpTask("later", tg.URL, "", clk.Now().Add(time.Minute)),
		} {
			if _, err := c.CreateTask(r.Context(), req); err != nil {
				w.WriteHeader(http.StatusInternalServerError)
			}
		}
	})
	mustCreate(t, c, httpTask("first", tg.URL, "", start))
	mustRunDue(t, e, 2)
	infos := e.Tasks()
	if len(infos) != 1 || infos[0].Name != queue+"/tasks/later" {
		t.Errorf("Tasks() = %+v, want only .../tasks/later", infos)
	}
}

func TestRunTask(t *testing.T) {
	e, c, _ := mustManual(t, taskemu.RetryConfig{})
	tg := mustTarget(t, ok)
	task := mustCreate(t, c, httpTask("run", tg.URL, "", start.Add(time.Hour)))
	got, err := c.RunTask(t.Context(), &cloudtaskspb.RunTaskRequest{Name: task.GetName()})
	if err != nil {
		t.Fatalf("RunTask() error = %v", err)
	}
	if got.GetDispatchCount() != 1 || len(tg.requests()) != 1 {
		t.Errorf("RunTask() = %v with %d requests, want dispatch count 1 and 1 request", got, len(tg.requests()))
	}
	if infos := e.Tasks(); len(infos) != 0 {
		t.Errorf("Tasks() = %+v, want none", infos)
	}
}

func TestRunDueCanceled(t *testing.T) {
	e, c, _ := mustManual(t, taskemu.RetryConfig{})
	arrived := make(chan struct{})
	tg := mustTarget(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	mustCreate(t, c, httpTask("hang", tg.URL, "", start))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	n, err := e.RunDue(ctx)
	if n != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("RunDue() = %d, %v, want 1, context.Canceled", n, err)
	}
	if infos := e.Tasks(); len(infos) != 1 || infos[0].Attempts != 1 || infos[0].ScheduleTime != start.Add(taskemu.DefaultMinBackoff).UnixMilli() {
		t.Errorf("Tasks() = %+v, want the task back with 1 attempt, retried after the min backoff", infos)
	}
}

func TestRealClockDispatch(t *testing.T) {
	var wall clock.Real
	e, c := mustStart(t, taskemu.Options{Clock: wall})
	tg := mustTarget(t, ok)
	at := wall.Now().Add(200 * time.Millisecond)
	mustCreate(t, c, httpTask("real", tg.URL, "", at))

	// The dispatcher runs on its own goroutine against the wall clock, so
	// poll with a deadline.
	deadline := wall.Now().Add(10 * time.Second)
	for len(tg.requests()) == 0 {
		if wall.Now().After(deadline) {
			t.Fatal("task did not arrive within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := tg.requests()[0]; r.At.Before(at.Truncate(time.Microsecond)) {
		t.Errorf("task arrived at %v, before its schedule time %v", r.At, at)
	}
	for len(e.Tasks()) != 0 {
		if wall.Now().After(deadline) {
			t.Fatalf("Tasks() = %+v after delivery, want none", e.Tasks())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
