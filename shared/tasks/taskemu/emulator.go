package taskemu

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"onorca.dev/push/shared/clock"
)

// nameReuseDelay is how long the name of a task that ran or was deleted stays
// reserved: about 24 h in Cloud Tasks (CreateTaskRequest.task in
// cloudtasks.proto; go-dependencies.md §2c).
const nameReuseDelay = 24 * time.Hour

// MaxRate is the highest dispatch rate a Cloud Tasks queue takes
// (queue.proto, RateLimits.max_dispatches_per_second).
const MaxRate = 500

// maxConcurrentDispatches bounds the attempts in flight per dispatch loop
// when no queue has a limit of its own (Options.MaxConcurrent). Cloud Tasks
// allows far more; the emulator shares a small machine.
const maxConcurrentDispatches = 8

// maxInFlight bounds the attempts in flight per dispatch loop when the
// queues have limits of their own, which then decide.
const maxInFlight = 1000

// loopLimit is how many attempts one dispatch loop keeps in flight.
func (e *Emulator) loopLimit() int {
	if e.maxConc > 0 {
		return maxInFlight
	}
	return maxConcurrentDispatches
}

// Errors returned by the emulator's own API.
var (
	// ErrClosed is returned by [Emulator.Serve] and [Emulator.RunDue] after
	// [Emulator.Close].
	ErrClosed = errors.New("taskemu: emulator closed")
	// ErrServing is returned by [Emulator.Serve] when it is already serving.
	ErrServing = errors.New("taskemu: already serving")
)

// Options configures an [Emulator].
type Options struct {
	// Clock is the shared clock: schedule times, retry times and the 24 h
	// name reservation read it. Required.
	Clock clock.Clock
	// HTTPClient sends tasks to their targets. Required.
	HTTPClient *http.Client
	// Retry is every queue's retry policy; zero fields take defaults.
	Retry RetryConfig
	// Manual stops tasks from dispatching on their own: only
	// [Emulator.RunDue] and RunTask dispatch. Use it with a [clock.Manual].
	Manual bool
	// Rate is each queue's dispatch limit, in dispatches per second of the
	// clock, with a burst of one second's worth, as a Cloud Tasks queue's
	// max_dispatches_per_second (at most 500); zero means no limit. It
	// holds for [Emulator.RunDue] too: under a manual clock a queue
	// dispatches Rate tasks for each second the clock moves. RunTask, an
	// explicit call, is not limited.
	Rate float64
	// MaxConcurrent is each queue's limit of attempts in flight, as a
	// Cloud Tasks queue's max_concurrent_dispatches; zero means only the
	// emulator's own bound of 8 in flight in all.
	MaxConcurrent int
}

// TaskInfo describes one task for inspection (GET /_emulator/tasks).
type TaskInfo struct {
	// Name is the task's full name.
	Name string `json:"name"`
	// ScheduleTime is when the task is next due, in Unix milliseconds.
	ScheduleTime int64 `json:"scheduleTime"`
	// URL is the task's target.
	URL string `json:"url"`
	// Attempts is how many times the task has been dispatched.
	Attempts int `json:"attempts"`
	// LastStatus is the HTTP status of the last answer, or 0 when none came.
	LastStatus int `json:"lastStatus,omitempty"`
	// Body is the request body.
	Body string `json:"body"`
}

// Emulator is an in-memory Cloud Tasks service. It is safe for concurrent use;
// [Emulator.Close] must be called to stop its dispatcher.
type Emulator struct {
	clock    clock.Clock
	client   *http.Client
	retry    RetryConfig
	ctx      context.Context // cancelled by Close: aborts in-flight attempts
	cancel   context.CancelFunc
	wake     chan struct{} // capacity 1: something changed for the dispatcher
	loopDone chan struct{} // closed when the dispatcher has stopped
	wg       sync.WaitGroup

	// mu guards the fields below, and every task's fields.
	mu       sync.Mutex
	tasks    map[string]*task     // by full name, waiting or running
	pending  taskHeap             // waiting tasks by due time
	used     map[string]time.Time // names that ran or were deleted, and when
	pruneAt  int                  // prune used when it reaches this size
	failed   []TaskInfo           // tasks dropped after their last attempt
	failN    int                  // CreateTask calls left to fail
	failCode codes.Code
	seq      uint64 // last generated task ID
	srv      *grpc.Server
	closed   bool
	paused   bool // no attempt starts: see Pause
	usage    Usage
	rate     float64
	limiters map[string]*rate.Limiter // by queue, with rate
	maxConc  int                      // per queue; 0: none
	inflight map[string]int           // attempts in flight by queue
}

// New returns an emulator with no tasks. Unless opts.Manual is set it starts
// a dispatcher that runs until ctx ends or [Emulator.Close] is called.
func New(ctx context.Context, opts Options) (*Emulator, error) {
	if opts.Clock == nil || opts.HTTPClient == nil {
		return nil, errors.New("taskemu: Options.Clock and Options.HTTPClient are required")
	}
	retry, err := opts.Retry.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Rate < 0 || opts.Rate > MaxRate {
		return nil, fmt.Errorf("taskemu: Options.Rate %v is outside 0..%v", opts.Rate, MaxRate)
	}
	if opts.MaxConcurrent < 0 || opts.MaxConcurrent > maxInFlight {
		return nil, fmt.Errorf("taskemu: Options.MaxConcurrent %d is outside 0..%d", opts.MaxConcurrent, maxInFlight)
	}
	e := &Emulator{
		clock:    opts.Clock,
		client:   opts.HTTPClient,
		retry:    retry,
		wake:     make(chan struct{}, 1),
		loopDone: make(chan struct{}),
		tasks:    make(map[string]*task),
		used:     make(map[string]time.Time),
		pruneAt:  1024,
		rate:     opts.Rate,
		limiters: make(map[string]*rate.Limiter),
		maxConc:  opts.MaxConcurrent,
		inflight: make(map[string]int),
	}
	e.ctx, e.cancel = context.WithCancel(ctx)
	if opts.Manual {
		close(e.loopDone)
	} else {
		go e.dispatchLoop()
	}
	return e, nil
}

// Register installs the emulator's CloudTasks service on r, for a caller that
// runs its own gRPC server.
func (e *Emulator) Register(r grpc.ServiceRegistrar) {
	cloudtaskspb.RegisterCloudTasksServer(r, &server{e: e})
}

// Serve serves the CloudTasks gRPC service on lis until [Emulator.Close],
// then returns nil. It returns [ErrClosed] after Close and [ErrServing] if
// called twice.
func (e *Emulator) Serve(lis net.Listener) error {
	srv := grpc.NewServer()
	e.Register(srv)
	e.mu.Lock()
	err := ErrServing
	switch {
	case e.closed:
		err = ErrClosed
	case e.srv == nil:
		e.srv, err = srv, nil
	}
	e.mu.Unlock()
	if err != nil {
		lis.Close()
		return err
	}
	if err := srv.Serve(lis); err != nil {
		return fmt.Errorf("taskemu: serve: %w", err)
	}
	return nil
}

// Close stops the gRPC server and the dispatcher, cancels attempts in flight
// and waits for them to finish. Later calls do nothing.
func (e *Emulator) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	srv := e.srv
	e.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
	e.cancel()
	<-e.loopDone
	e.wg.Wait()
}

// Pause stops dispatching for good: no attempt starts any more, while the
// attempts in flight go on and tasks can still be created. A process that is
// shutting down calls it before it drains, so that a task falling due
// meanwhile is not sent into a server that refuses it.
func (e *Emulator) Pause() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.paused = true
}

// FailCreates makes the next n CreateTask calls fail with code before they
// store anything, as an unavailable service would. It replaces any earlier
// setting; n <= 0 clears it.
func (e *Emulator) FailCreates(n int, code codes.Code) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failN, e.failCode = max(n, 0), code
}

// Tasks returns the tasks waiting or in flight, by schedule time then name.
func (e *Emulator) Tasks() []TaskInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]TaskInfo, 0, len(e.tasks))
	for _, t := range e.tasks {
		out = append(out, info(t))
	}
	slices.SortFunc(out, func(a, b TaskInfo) int {
		return cmp.Or(cmp.Compare(a.ScheduleTime, b.ScheduleTime), strings.Compare(a.Name, b.Name))
	})
	return out
}

// Failed returns the tasks dropped after their last allowed attempt, oldest
// first.
func (e *Emulator) Failed() []TaskInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.failed)
}

// info describes t; the caller holds e.mu.
func info(t *task) TaskInfo {
	req := t.pb.GetHttpRequest()
	return TaskInfo{
		Name:         t.pb.GetName(),
		ScheduleTime: t.due.UnixMilli(),
		URL:          req.GetUrl(),
		Attempts:     int(t.pb.GetDispatchCount()),
		LastStatus:   t.lastStatus,
		Body:         string(req.GetBody()),
	}
}

// poke wakes the dispatcher without blocking.
func (e *Emulator) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
