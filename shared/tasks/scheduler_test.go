package tasks_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/tasks"
	"onorca.dev/push/shared/tasks/taskemu"
)

const queue = "projects/p/locations/l/queues/deliver"

var start = time.UnixMilli(1_800_000_000_000)

// env is a Scheduler wired to a manual-clock emulator and a recording target.
type env struct {
	sched   *tasks.Scheduler
	emu     *taskemu.Emulator
	inspect *cloudtasks.Client
	clk     *clock.Manual
	url     string
	// clientOpts reach the emulator, for a second Scheduler.
	clientOpts []option.ClientOption
	// mu guards got.
	mu  sync.Mutex
	got []received
}

// received is what the target saw of one request.
type received struct {
	method, path string
	header       http.Header
	body         string
}

// mustEnv starts the emulator on 127.0.0.1:0, a target, and a Scheduler for
// them; account and audience set the OIDC token.
func mustEnv(t *testing.T, account, audience string) *env {
	t.Helper()
	return mustEnvWith(t, account, audience, []string{queue})
}

// mustEnvWith is mustEnv with a Scheduler over queues.
func mustEnvWith(t *testing.T, account, audience string, queues []string) *env {
	t.Helper()
	ev := &env{clk: clock.NewManual(start)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev.mu.Lock()
		defer ev.mu.Unlock()
		ev.got = append(ev.got, received{r.Method, r.URL.Path, r.Header.Clone(), string(body)})
	}))
	t.Cleanup(srv.Close)
	ev.url = srv.URL + "/deliver"

	emu, err := taskemu.New(t.Context(), taskemu.Options{Clock: ev.clk, HTTPClient: srv.Client(), Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- emu.Serve(lis) }()
	t.Cleanup(func() {
		emu.Close()
		// A test that ends at once may close the emulator before Serve
		// has started: Serve then answers ErrClosed.
		if err := <-served; err != nil && !errors.Is(err, taskemu.ErrClosed) {
			t.Errorf("Serve() = %v", err)
		}
	})
	ev.emu = emu

	clientOpts := []option.ClientOption{
		option.WithEndpoint(lis.Addr().String()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
	ev.sched, err = tasks.New(t.Context(), tasks.Options{
		Queues: queues, DeliverURL: ev.url, ServiceAccount: account, Audience: audience, ClientOptions: clientOpts})
	if err != nil {
		t.Fatalf("tasks.New() error = %v", err)
	}
	t.Cleanup(func() {
		if err := ev.sched.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	ev.clientOpts = clientOpts
	ev.inspect, err = cloudtasks.NewClient(t.Context(), clientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.inspect.Close() })
	return ev
}

func (ev *env) mustSchedule(t *testing.T, batchID string, at time.Time) {
	t.Helper()
	ev.mustScheduleKey(t, batchID, at, "")
}

func (ev *env) mustScheduleKey(t *testing.T, batchID string, at time.Time, key string) {
	t.Helper()
	if err := ev.sched.Schedule(t.Context(), batchID, "reg", at, key); err != nil {
		t.Fatalf("Schedule(%q, %v) error = %v", batchID, at, err)
	}
}

func (ev *env) listTasks(t *testing.T) []*cloudtaskspb.Task {
	t.Helper()
	var out []*cloudtaskspb.Task
	it := ev.inspect.ListTasks(t.Context(), &cloudtaskspb.ListTasksRequest{Parent: queue, ResponseView: cloudtaskspb.Task_FULL})
	for {
		task, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out
		}
		if err != nil {
			t.Fatalf("ListTasks() error = %v", err)
		}
		out = append(out, task)
	}
}

func TestScheduleCreatesDeliverTask(t *testing.T) {
	ev := mustEnv(t, "tasks@p.iam.gserviceaccount.com", "https://deliver.example")
	due := start.Add(3 * time.Second)
	ev.mustSchedule(t, "batch-1", due)

	list := ev.listTasks(t)
	if len(list) != 1 {
		t.Fatalf("ListTasks() = %d tasks, want 1", len(list))
	}
	task := list[0]
	hr := task.GetHttpRequest()
	wantBody := `{"batchId":"batch-1","dueAt":1800000003000}`
	if !task.GetScheduleTime().AsTime().Equal(due) || task.GetDispatchDeadline().AsDuration() != tasks.DefaultDispatchDeadline ||
		hr.GetUrl() != ev.url || hr.GetHttpMethod() != cloudtaskspb.HttpMethod_POST || string(hr.GetBody()) != wantBody ||
		hr.GetOidcToken().GetServiceAccountEmail() != "tasks@p.iam.gserviceaccount.com" || hr.GetOidcToken().GetAudience() != "https://deliver.example" {
		t.Errorf("task = %v, want POST %s %s at %v, deadline 30s, OIDC token", task, ev.url, wantBody, due)
	}

	if n, err := ev.emu.RunDue(t.Context()); n != 0 || err != nil {
		t.Fatalf("RunDue() before due = %d, %v, want 0, nil", n, err)
	}
	ev.clk.Advance(3 * time.Second)
	if n, err := ev.emu.RunDue(t.Context()); n != 1 || err != nil {
		t.Fatalf("RunDue() at due = %d, %v, want 1, nil", n, err)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.got) != 1 {
		t.Fatalf("target got %d requests, want 1", len(ev.got))
	}
	r := ev.got[0]
	got := []string{r.method, r.path, r.header.Get("Content-Type"), r.header.Get("Authorization"), r.body}
	want := []string{"POST", "/deliver", "application/json", "Bearer " + taskemu.OIDCTokenPrefix + "https://deliver.example", wantBody}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered request (-want +got):\n%s", diff)
	}
}

func TestScheduleWithoutOIDC(t *testing.T) {
	ev := mustEnv(t, "", "")
	ev.mustSchedule(t, "b", start)
	if n, err := ev.emu.RunDue(t.Context()); n != 1 || err != nil {
		t.Fatalf("RunDue() = %d, %v, want 1, nil", n, err)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if auth := ev.got[0].header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization = %q, want none", auth)
	}
}

func TestScheduleIsIdempotent(t *testing.T) {
	ev := mustEnv(t, "", "")
	due := start.Add(3 * time.Second)
	ev.mustSchedule(t, "b1", due)
	ev.mustSchedule(t, "b1", due)
	if n := len(ev.emu.Tasks()); n != 1 {
		t.Fatalf("after scheduling (b1, due) twice: %d tasks, want 1", n)
	}
	ev.mustSchedule(t, "b1", due.Add(time.Millisecond))
	ev.mustSchedule(t, "b2", due)
	if n := len(ev.emu.Tasks()); n != 3 {
		t.Fatalf("after a new due time and a new batch: %d tasks, want 3", n)
	}
	// A wake-up of b1 at the same due time is another task; repeated, it
	// is still one.
	ev.mustScheduleKey(t, "b1", due, "lease-1")
	ev.mustScheduleKey(t, "b1", due, "lease-1")
	if n := len(ev.emu.Tasks()); n != 4 {
		t.Fatalf("after a keyed wake-up of (b1, due), twice: %d tasks, want 4", n)
	}
	// After the task ran, the same (batch, due) is still a no-op.
	ev.clk.Advance(time.Minute)
	if _, err := ev.emu.RunDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	ev.mustSchedule(t, "b1", due)
	if n := len(ev.emu.Tasks()); n != 0 {
		t.Errorf("after rescheduling a delivered (batch, due): %d tasks, want 0", n)
	}
}

func TestScheduleRetries(t *testing.T) {
	tests := []struct {
		name      string
		failures  int
		code      codes.Code
		want      []codes.Code // outcome of successive Schedule calls
		wantTasks int
	}{
		{"survives two unavailable", 2, codes.Unavailable, []codes.Code{codes.OK}, 1},
		// Three attempts fail, two failures are left for the next call.
		{"gives up after three attempts", 5, codes.Unavailable, []codes.Code{codes.Unavailable, codes.OK}, 1},
		{"retries deadline exceeded", 1, codes.DeadlineExceeded, []codes.Code{codes.OK}, 1},
		{"already exists is success", 1, codes.AlreadyExists, []codes.Code{codes.OK}, 0},
		{"permission denied is not retried", 2, codes.PermissionDenied,
			[]codes.Code{codes.PermissionDenied, codes.PermissionDenied, codes.OK}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := mustEnv(t, "", "")
			ev.emu.FailCreates(tt.failures, tt.code)
			for i, want := range tt.want {
				err := ev.sched.Schedule(t.Context(), "b", "reg", start, "")
				if got := status.Code(err); got != want {
					t.Fatalf("Schedule() #%d = %v, want code %v", i+1, err, want)
				}
			}
			if n := len(ev.emu.Tasks()); n != tt.wantTasks {
				t.Errorf("%d tasks, want %d", n, tt.wantTasks)
			}
		})
	}
}

func TestScheduleStopsWhenContextEnds(t *testing.T) {
	ev := mustEnv(t, "", "")
	ev.emu.FailCreates(3, codes.Unavailable)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ev.sched.Schedule(ctx, "b", "reg", start, ""); err == nil {
		t.Fatal("Schedule(canceled ctx) = nil, want an error")
	}
	if n := len(ev.emu.Tasks()); n != 0 {
		t.Errorf("%d tasks, want 0", n)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	good := tasks.Options{Queues: []string{queue}, DeliverURL: "https://deliver.example/x"}
	tests := []struct {
		name   string
		modify func(*tasks.Options)
	}{
		{"short queue", func(o *tasks.Options) { o.Queues = []string{"deliver"} }},
		{"queue with task", func(o *tasks.Options) { o.Queues = []string{queue + "/tasks/x"} }},
		{"no queue", func(o *tasks.Options) { o.Queues = nil }},
		{"a queue twice", func(o *tasks.Options) { o.Queues = []string{queue, queue} }},
		{"one bad queue of two", func(o *tasks.Options) { o.Queues = []string{queue, "deliver"} }},
		{"relative url", func(o *tasks.Options) { o.DeliverURL = "/deliver" }},
		{"no scheme", func(o *tasks.Options) { o.DeliverURL = "deliver.example" }},
		{"deadline too short", func(o *tasks.Options) { o.DispatchDeadline = 10 * time.Second }},
		{"deadline too long", func(o *tasks.Options) { o.DispatchDeadline = time.Hour }},
		{"account without audience", func(o *tasks.Options) { o.ServiceAccount = "a@p.iam.gserviceaccount.com" }},
		{"audience without account", func(o *tasks.Options) { o.Audience = "https://deliver.example" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := good
			tt.modify(&opts)
			s, err := tasks.New(t.Context(), opts)
			if !errors.Is(err, tasks.ErrInvalidOptions) {
				if s != nil {
					s.Close()
				}
				t.Errorf("New(%+v) error = %v, want ErrInvalidOptions", opts, err)
			}
		})
	}
}
