package taskemu

import (
	"container/heap"
	"context"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Dispatch deadlines of HTTP tasks (task.proto, Task.dispatch_deadline).
const (
	defaultDispatchDeadline = 10 * time.Minute
	minDispatchDeadline     = 15 * time.Second
	maxDispatchDeadline     = 30 * time.Minute
)

// maxPageSize is ListTasks' largest and default page (cloudtasks.proto,
// ListTasksRequest.page_size).
const maxPageSize = 1000

// Name forms from task.proto, Task.name.
var (
	queuePattern  = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/queues/[^/]+$`)
	taskIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,500}$`)
)

// server is the gRPC face of an Emulator.
type server struct {
	cloudtaskspb.UnimplementedCloudTasksServer
	e *Emulator
}

// CreateTask stores a task. A known name, or one that ran or was deleted in
// the last 24 h, is AlreadyExists.
func (s *server) CreateTask(_ context.Context, req *cloudtaskspb.CreateTaskRequest) (*cloudtaskspb.Task, error) {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.usage.Creates++
	if e.failN > 0 {
		e.failN--
		return nil, status.Errorf(e.failCode, "taskemu: injected CreateTask failure")
	}
	if err := validateTask(req); err != nil {
		return nil, err
	}
	now := e.clock.Now()
	t := proto.Clone(req.GetTask()).(*cloudtaskspb.Task)
	if t.Name == "" {
		e.seq++
		t.Name = req.GetParent() + "/tasks/" + strconv.FormatUint(e.seq, 10)
	}
	if err := e.reserveLocked(t.Name, now); err != nil {
		return nil, err
	}
	// Output-only fields, as the service sets them.
	due := now
	if st := t.GetScheduleTime(); st != nil && st.AsTime().After(now) {
		due = st.AsTime()
	}
	due = due.Truncate(time.Microsecond)
	t.ScheduleTime = timestamppb.New(due)
	t.CreateTime = timestamppb.New(now.Truncate(time.Second))
	t.DispatchCount, t.ResponseCount = 0, 0
	t.FirstAttempt, t.LastAttempt = nil, nil
	t.View = cloudtaskspb.Task_BASIC
	if t.DispatchDeadline == nil {
		t.DispatchDeadline = durationpb.New(defaultDispatchDeadline)
	}
	if t.GetHttpRequest().GetHttpMethod() == cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED {
		t.GetHttpRequest().HttpMethod = cloudtaskspb.HttpMethod_POST
	}
	st := &task{pb: t, due: due}
	e.tasks[t.Name] = st
	heap.Push(&e.pending, st)
	e.poke()
	return proto.Clone(t).(*cloudtaskspb.Task), nil
}

// reserveLocked fails with AlreadyExists when name is taken or was used in
// the last 24 h, and prunes older reservations now and then.
func (e *Emulator) reserveLocked(name string, now time.Time) error {
	if _, ok := e.tasks[name]; ok {
		return status.Errorf(codes.AlreadyExists, "task %q already exists", name)
	}
	if at, ok := e.used[name]; ok && now.Sub(at) < nameReuseDelay {
		return status.Errorf(codes.AlreadyExists, "task %q ran or was deleted recently", name)
	}
	if len(e.used) >= e.pruneAt {
		for n, at := range e.used {
			if now.Sub(at) >= nameReuseDelay {
				delete(e.used, n)
			}
		}
		e.pruneAt = 2*len(e.used) + 1024
	}
	return nil
}

// validateTask checks what the service would refuse with InvalidArgument.
func validateTask(req *cloudtaskspb.CreateTaskRequest) error {
	if !queuePattern.MatchString(req.GetParent()) {
		return status.Errorf(codes.InvalidArgument, "parent %q is not projects/P/locations/L/queues/Q", req.GetParent())
	}
	t := req.GetTask()
	if t.GetName() != "" {
		id, ok := strings.CutPrefix(t.GetName(), req.GetParent()+"/tasks/")
		if !ok || !taskIDPattern.MatchString(id) {
			return status.Errorf(codes.InvalidArgument, "task name %q is not %s/tasks/[A-Za-z0-9_-]{1,500}", t.GetName(), req.GetParent())
		}
	}
	hr := t.GetHttpRequest()
	if hr == nil {
		return status.Error(codes.InvalidArgument, "taskemu supports HTTP tasks only")
	}
	if u, err := url.Parse(hr.GetUrl()); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return status.Errorf(codes.InvalidArgument, "url %q is not an absolute http(s) URL", hr.GetUrl())
	}
	if d := t.GetDispatchDeadline(); d != nil && (d.AsDuration() < minDispatchDeadline || d.AsDuration() > maxDispatchDeadline) {
		return status.Errorf(codes.InvalidArgument, "dispatch deadline %v is outside [15s, 30m]", d.AsDuration())
	}
	return nil
}

// GetTask returns a task, or NotFound.
func (s *server) GetTask(_ context.Context, req *cloudtaskspb.GetTaskRequest) (*cloudtaskspb.Task, error) {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.usage.Gets++
	t, ok := e.tasks[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "task %q not found", req.GetName())
	}
	return proto.Clone(t.pb).(*cloudtaskspb.Task), nil
}

// ListTasks lists a queue's tasks by schedule time, then name. The page token
// is the offset of the page's first task.
func (s *server) ListTasks(_ context.Context, req *cloudtaskspb.ListTasksRequest) (*cloudtaskspb.ListTasksResponse, error) {
	e := s.e
	e.mu.Lock()
	e.usage.Lists++
	e.mu.Unlock()
	start := 0
	if tok := req.GetPageToken(); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			return nil, status.Errorf(codes.InvalidArgument, "bad page token %q", tok)
		}
		start = n
	}
	size := int(req.GetPageSize())
	if size <= 0 || size > maxPageSize {
		size = maxPageSize
	}
	prefix := req.GetParent() + "/tasks/"
	e.mu.Lock()
	var all []*task
	for name, t := range e.tasks {
		if strings.HasPrefix(name, prefix) {
			all = append(all, t)
		}
	}
	slices.SortFunc(all, func(a, b *task) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return strings.Compare(a.pb.GetName(), b.pb.GetName())
	})
	resp := &cloudtaskspb.ListTasksResponse{}
	for _, t := range all[min(start, len(all)):min(start+size, len(all))] {
		resp.Tasks = append(resp.Tasks, proto.Clone(t.pb).(*cloudtaskspb.Task))
	}
	e.mu.Unlock()
	if start+size < len(all) {
		resp.NextPageToken = strconv.Itoa(start + size)
	}
	return resp, nil
}

// DeleteTask removes a task and reserves its name, or answers NotFound.
func (s *server) DeleteTask(_ context.Context, req *cloudtaskspb.DeleteTaskRequest) (*emptypb.Empty, error) {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.usage.Deletes++
	t, ok := e.tasks[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "task %q not found", req.GetName())
	}
	e.removeLocked(t, e.clock.Now())
	return &emptypb.Empty{}, nil
}

// RunTask dispatches a task now, whatever its schedule time, and returns it as
// dispatched. Unlike the service, which answers once the request is sent,
// the emulator answers after the target has, so tests need not wait. A task
// already in flight is FailedPrecondition; an unknown one NotFound.
func (s *server) RunTask(ctx context.Context, req *cloudtaskspb.RunTaskRequest) (*cloudtaskspb.Task, error) {
	e := s.e
	e.mu.Lock()
	e.usage.Runs++
	t, ok := e.tasks[req.GetName()]
	switch {
	case e.closed:
		e.mu.Unlock()
		return nil, status.Error(codes.Unavailable, "taskemu: closed")
	case !ok:
		e.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "task %q not found", req.GetName())
	case t.index < 0:
		e.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "task %q is being dispatched", req.GetName())
	}
	heap.Remove(&e.pending, t.index)
	c := e.startLocked(t, e.clock.Now())
	e.mu.Unlock()
	e.attempt(ctx, c)
	return c.snapshot, nil
}
