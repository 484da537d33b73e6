package taskemu_test

import (
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
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/tasks/taskemu"
)

const queue = "projects/p/locations/l/queues/q"

var start = time.UnixMilli(1_800_000_000_000)

// mustStart serves an emulator on 127.0.0.1:0 and returns it with a real
// cloudtasks client connected to it.
func mustStart(t *testing.T, opts taskemu.Options) (*taskemu.Emulator, *cloudtasks.Client) {
	t.Helper()
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	e, err := taskemu.New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(lis) }()
	c, err := cloudtasks.NewClient(t.Context(),
		option.WithEndpoint(lis.Addr().String()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatalf("cloudtasks.NewClient() error = %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		e.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve() = %v, want nil", err)
		}
	})
	return e, c
}

// mustManual starts an emulator under a manual clock at start.
func mustManual(t *testing.T, retry taskemu.RetryConfig) (*taskemu.Emulator, *cloudtasks.Client, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(start)
	e, c := mustStart(t, taskemu.Options{Clock: clk, Retry: retry, Manual: true})
	return e, c, clk
}

// received is one request a target saw.
type received struct {
	Method string
	Header http.Header
	Body   string
	At     time.Time // by the real clock
}

// target is an HTTP server that records requests and answers with answer.
type target struct {
	*httptest.Server
	// mu guards got.
	mu  sync.Mutex
	got []received
}

// mustTarget starts a target whose answer is decided by answer, given the
// request's 0-based arrival index.
func mustTarget(t *testing.T, answer func(i int, w http.ResponseWriter, r *http.Request)) *target {
	t.Helper()
	tg := &target{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tg.mu.Lock()
		i := len(tg.got)
		tg.got = append(tg.got, received{Method: r.Method, Header: r.Header.Clone(), Body: string(body), At: clock.Real{}.Now()})
		tg.mu.Unlock()
		answer(i, w, r)
	}))
	t.Cleanup(tg.Close)
	return tg
}

// ok answers 200.
func ok(int, http.ResponseWriter, *http.Request) {}

func (tg *target) requests() []received {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]received(nil), tg.got...)
}

// httpTask returns a task named id (empty: generated) that posts body to url
// at at.
func httpTask(id, url, body string, at time.Time) *cloudtaskspb.CreateTaskRequest {
	name := ""
	if id != "" {
		name = queue + "/tasks/" + id
	}
	return &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: &cloudtaskspb.Task{
		Name:         name,
		ScheduleTime: timestamppb.New(at),
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
			HttpMethod: cloudtaskspb.HttpMethod_POST,
			Url:        url,
			Headers:    map[string]string{"Content-Type": "application/json"},
			Body:       []byte(body),
		}},
	}}
}

func mustCreate(t *testing.T, c *cloudtasks.Client, req *cloudtaskspb.CreateTaskRequest) *cloudtaskspb.Task {
	t.Helper()
	task, err := c.CreateTask(t.Context(), req)
	if err != nil {
		t.Fatalf("CreateTask(%q) error = %v", req.GetTask().GetName(), err)
	}
	return task
}

func mustRunDue(t *testing.T, e *taskemu.Emulator, want int) {
	t.Helper()
	n, err := e.RunDue(t.Context())
	if err != nil || n != want {
		t.Fatalf("RunDue() = %d, %v, want %d, nil", n, err, want)
	}
}

func TestNewRequiresDependencies(t *testing.T) {
	tests := []struct {
		name string
		opts taskemu.Options
	}{
		{"no clock", taskemu.Options{HTTPClient: &http.Client{}}},
		{"no http client", taskemu.Options{Clock: clock.Real{}}},
		{"max backoff below min", taskemu.Options{Clock: clock.Real{}, HTTPClient: &http.Client{},
			Retry: taskemu.RetryConfig{MinBackoff: time.Minute, MaxBackoff: time.Second}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := taskemu.New(t.Context(), tt.opts); err == nil {
				e.Close()
				t.Fatalf("New(%+v) error = nil, want an error", tt.opts)
			}
		})
	}
}

func TestCreateGetListDelete(t *testing.T) {
	_, c, _ := mustManual(t, taskemu.RetryConfig{})
	later := mustCreate(t, c, httpTask("b", "http://127.0.0.1:1/x", "{}", start.Add(time.Minute)))
	sooner := mustCreate(t, c, httpTask("a", "http://127.0.0.1:1/x", "{}", start.Add(time.Second)))

	got, err := c.GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: later.GetName()})
	if err != nil {
		t.Fatalf("GetTask() error = %v", err)
	}
	if got.GetName() != queue+"/tasks/b" || !got.GetScheduleTime().AsTime().Equal(start.Add(time.Minute)) ||
		got.GetDispatchDeadline().AsDuration() != 10*time.Minute || got.GetView() != cloudtaskspb.Task_BASIC {
		t.Errorf("GetTask() = %v, want name .../tasks/b, schedule +1m, deadline 10m, view BASIC", got)
	}

	var names []string
	for it := c.ListTasks(t.Context(), &cloudtaskspb.ListTasksRequest{Parent: queue, PageSize: 1}); ; {
		task, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatalf("ListTasks() error = %v", err)
		}
		names = append(names, task.GetName())
	}
	if diff := cmp.Diff([]string{sooner.GetName(), later.GetName()}, names); diff != "" {
		t.Errorf("ListTasks() names (-want +got):\n%s", diff)
	}

	if err := c.DeleteTask(t.Context(), &cloudtaskspb.DeleteTaskRequest{Name: sooner.GetName()}); err != nil {
		t.Fatalf("DeleteTask() error = %v", err)
	}
	for _, op := range []struct {
		name string
		err  error
	}{
		{"GetTask deleted", second(c.GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: sooner.GetName()}))},
		{"GetTask unknown", second(c.GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: queue + "/tasks/zzz"}))},
		{"DeleteTask deleted", c.DeleteTask(t.Context(), &cloudtaskspb.DeleteTaskRequest{Name: sooner.GetName()})},
		{"RunTask unknown", second(c.RunTask(t.Context(), &cloudtaskspb.RunTaskRequest{Name: queue + "/tasks/zzz"}))},
	} {
		if got := status.Code(op.err); got != codes.NotFound {
			t.Errorf("%s: code = %v, want NotFound", op.name, got)
		}
	}
	_, err = c.CreateTask(t.Context(), httpTask("a", "http://127.0.0.1:1/x", "{}", start))
	if got := status.Code(err); got != codes.AlreadyExists {
		t.Errorf("CreateTask(deleted name) code = %v, want AlreadyExists", got)
	}
}

func second[T any](_ T, err error) error { return err }

func TestCreateTaskRejects(t *testing.T) {
	_, c, _ := mustManual(t, taskemu.RetryConfig{})
	mustCreate(t, c, httpTask("dup", "http://127.0.0.1:1/x", "", start))
	tests := []struct {
		name   string
		modify func(*cloudtaskspb.CreateTaskRequest)
		want   codes.Code
	}{
		{"duplicate name", func(r *cloudtaskspb.CreateTaskRequest) { r.Task.Name = queue + "/tasks/dup" }, codes.AlreadyExists},
		{"bad parent", func(r *cloudtaskspb.CreateTaskRequest) { r.Parent = "queues/q" }, codes.InvalidArgument},
		{"name in another queue", func(r *cloudtaskspb.CreateTaskRequest) { r.Task.Name = queue + "2/tasks/x" }, codes.InvalidArgument},
		{"bad id character", func(r *cloudtaskspb.CreateTaskRequest) { r.Task.Name = queue + "/tasks/a.b" }, codes.InvalidArgument},
		{"relative url", func(r *cloudtaskspb.CreateTaskRequest) { r.Task.GetHttpRequest().Url = "/deliver" }, codes.InvalidArgument},
		{"no http request", func(r *cloudtaskspb.CreateTaskRequest) { r.Task.MessageType = nil }, codes.InvalidArgument},
		{"deadline too short", func(r *cloudtaskspb.CreateTaskRequest) {
			r.Task.DispatchDeadline = durationpb.New(5 * time.Second)
		}, codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httpTask("ok", "http://127.0.0.1:1/x", "", start)
			tt.modify(req)
			_, err := c.CreateTask(t.Context(), req)
			if got := status.Code(err); got != tt.want {
				t.Errorf("CreateTask() code = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGeneratedNames(t *testing.T) {
	_, c, _ := mustManual(t, taskemu.RetryConfig{})
	a := mustCreate(t, c, httpTask("", "http://127.0.0.1:1/x", "", start))
	b := mustCreate(t, c, httpTask("", "http://127.0.0.1:1/x", "", start))
	if a.GetName() == b.GetName() || len(a.GetName()) <= len(queue+"/tasks/") {
		t.Errorf("generated names %q and %q, want two distinct names under %s/tasks/", a.GetName(), b.GetName(), queue)
	}
}

func TestFailCreates(t *testing.T) {
	e, c, _ := mustManual(t, taskemu.RetryConfig{})
	e.FailCreates(2, codes.Unavailable)
	for i, want := range []codes.Code{codes.Unavailable, codes.Unavailable, codes.OK} {
		_, err := c.CreateTask(t.Context(), httpTask("f", "http://127.0.0.1:1/x", "", start))
		if got := status.Code(err); got != want {
			t.Errorf("CreateTask() #%d code = %v, want %v", i+1, got, want)
		}
	}
	if n := len(e.Tasks()); n != 1 {
		t.Errorf("len(Tasks()) = %d, want 1", n)
	}
}

func TestClose(t *testing.T) {
	e, err := taskemu.New(t.Context(), taskemu.Options{Clock: clock.Real{}, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	e.Close()
	if _, err := e.RunDue(t.Context()); !errors.Is(err, taskemu.ErrClosed) {
		t.Errorf("RunDue() after Close error = %v, want ErrClosed", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serve(lis); !errors.Is(err, taskemu.ErrClosed) {
		t.Errorf("Serve() after Close error = %v, want ErrClosed", err)
	}
}
