package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Dispatch deadlines of an HTTP task must lie in [15 s, 30 min] (task.proto,
// Task.dispatch_deadline; go-dependencies.md pitfall 9).
const (
	// MinDispatchDeadline is the shortest dispatch deadline Cloud Tasks accepts.
	MinDispatchDeadline = 15 * time.Second
	// MaxDispatchDeadline is the longest dispatch deadline Cloud Tasks accepts.
	MaxDispatchDeadline = 30 * time.Minute
	// DefaultDispatchDeadline is the deadline [New] uses when
	// [Options.DispatchDeadline] is zero: deliver makes one provider call, so
	// a dispatch that has not answered in 30 s is stuck and is better retried.
	DefaultDispatchDeadline = 30 * time.Second
)

// CreateTask has a 20 s default timeout and no retry (go-dependencies.md §2c,
// pitfall 9), so Schedule retries briefly itself. This is not the in-process
// delivery retry that style.md §7.3 bans: it repeats one idempotent RPC to
// Google and pauses 0.5 s in all. Each attempt gets a few seconds, well under
// the 30 s Cloud Tasks accepts for an RPC deadline (pkgsite
// internal/queue/gcpqueue ScheduleFetch), so three attempts and their pauses
// fit in a request's budget. Anything longer is the sweep's job.
const (
	createAttempts = 3
	createTimeout  = 5 * time.Second
	firstBackoff   = 100 * time.Millisecond
	backoffFactor  = 4 // pauses of 100 ms, then 400 ms
)

// ErrInvalidOptions is returned by [New] when [Options] are incomplete or
// outside what Cloud Tasks accepts; the error text names the field.
var ErrInvalidOptions = errors.New("tasks: invalid options")

// DeliverRequest is the JSON body of every task: the batch to deliver and the
// due time the task was scheduled for, in Unix milliseconds. The deliver
// function decodes it.
type DeliverRequest struct {
	BatchID string `json:"batchId"`
	DueAt   int64  `json:"dueAt"`
}

// Options configures a [Scheduler].
type Options struct {
	// Queues are the full queue names, projects/P/locations/L/queues/Q:
	// one or more, no name twice. A batch's tasks go to the queue its
	// registration hashes to ([Shard]).
	Queues []string
	// DeliverURL is the absolute http(s) URL of the deliver function.
	DeliverURL string
	// ServiceAccount is the e-mail of the account whose OIDC token Cloud
	// Tasks attaches, so the private deliver function accepts the call. Empty
	// means no token (the emulator).
	ServiceAccount string
	// Audience is the OIDC token's audience. It is required with
	// ServiceAccount, because the default (the full target URL) rarely
	// matches what the function checks (go-dependencies.md pitfall 9).
	Audience string
	// DispatchDeadline bounds one dispatch of a task; zero means
	// [DefaultDispatchDeadline]. It must lie in [MinDispatchDeadline,
	// MaxDispatchDeadline].
	DispatchDeadline time.Duration
	// ClientOptions are passed to the cloudtasks client; the emulator passes
	// its endpoint, no authentication and insecure transport credentials.
	ClientOptions []option.ClientOption
}

// Scheduler creates Cloud Tasks tasks that call the deliver function. It is
// safe for concurrent use.
type Scheduler struct {
	client   *cloudtasks.Client
	queues   []string
	url      string
	account  string // OIDC service account; empty: no token
	audience string
	deadline time.Duration
}

// New validates opts and returns a Scheduler over a new cloudtasks gRPC
// client. It returns an error wrapping [ErrInvalidOptions] for bad options.
// The client connects lazily, so New does no network I/O.
func New(ctx context.Context, opts Options) (*Scheduler, error) {
	s, err := newScheduler(opts)
	if err != nil {
		return nil, err
	}
	s.client, err = cloudtasks.NewClient(ctx, opts.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("tasks: new cloudtasks client: %w", err)
	}
	return s, nil
}

// newScheduler checks opts and returns a Scheduler without a client.
func newScheduler(opts Options) (*Scheduler, error) {
	if err := CheckQueues(opts.Queues); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	u, err := url.Parse(opts.DeliverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: DeliverURL %q is not an absolute http(s) URL", ErrInvalidOptions, opts.DeliverURL)
	}
	s := &Scheduler{queues: slices.Clone(opts.Queues), url: opts.DeliverURL, deadline: opts.DispatchDeadline}
	if s.deadline == 0 {
		s.deadline = DefaultDispatchDeadline
	}
	if s.deadline < MinDispatchDeadline || s.deadline > MaxDispatchDeadline {
		return nil, fmt.Errorf("%w: DispatchDeadline %v is outside [%v, %v]", ErrInvalidOptions, s.deadline, MinDispatchDeadline, MaxDispatchDeadline)
	}
	switch {
	case opts.ServiceAccount != "" && opts.Audience == "":
		return nil, fmt.Errorf("%w: ServiceAccount needs an Audience", ErrInvalidOptions)
	case opts.ServiceAccount == "" && opts.Audience != "":
		return nil, fmt.Errorf("%w: Audience without ServiceAccount", ErrInvalidOptions)
	}
	s.account, s.audience = opts.ServiceAccount, opts.Audience
	return s, nil
}

// Schedule asks Cloud Tasks to POST a [DeliverRequest] for batchID to the
// deliver function at time at (truncated to the millisecond), on the queue
// registrationID hashes to, so that one phone's tasks stay in one queue
// while the list of queues is the same. Scheduling the
// same batch, time and key again is a no-op: the task name is derived from
// the three, and Cloud Tasks answers a known name with AlreadyExists, which
// counts as success. Another key makes another task. Transient failures are retried twice with a short pause; after
// that, or on any other failure, the error is returned and the caller leaves
// the batch for the sweep.
func (s *Scheduler) Schedule(ctx context.Context, batchID, registrationID string, at time.Time, key string) error {
	queue := s.queues[Shard(registrationID, len(s.queues))]
	req, err := s.newTaskRequest(queue, batchID, at.UnixMilli(), key)
	if err != nil {
		return fmt.Errorf("tasks: schedule: %w", err)
	}
	pause := firstBackoff
	for attempt := 1; ; attempt++ {
		err = s.create(ctx, req)
		// AlreadyExists also covers an earlier attempt that timed out after
		// the service had created the task.
		if err == nil || status.Code(err) == codes.AlreadyExists {
			return nil
		}
		if attempt == createAttempts || !retryable(err) || ctx.Err() != nil {
			return fmt.Errorf("tasks: schedule: create task: %w", err)
		}
		// A real-time wait of at most 400 ms, bounded by ctx: the RPC to
		// Google is what failed, so no clock decides anything here.
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("tasks: schedule: create task: %w", errors.Join(err, ctx.Err()))
		case <-t.C:
		}
		pause *= backoffFactor
	}
}

// create makes one CreateTask call with its own deadline.
func (s *Scheduler) create(ctx context.Context, req *cloudtaskspb.CreateTaskRequest) error {
	ctx, cancel := context.WithTimeout(ctx, createTimeout)
	defer cancel()
	_, err := s.client.CreateTask(ctx, req)
	return err
}

// retryable reports whether a CreateTask error may pass on a second try. A
// DeadlineExceeded attempt may have created the task; the retry then meets
// AlreadyExists.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

// newTaskRequest builds the CreateTask request on queue for batchID at dueMs
// for key.
func (s *Scheduler) newTaskRequest(queue, batchID string, dueMs int64, key string) (*cloudtaskspb.CreateTaskRequest, error) {
	body, err := json.Marshal(DeliverRequest{BatchID: batchID, DueAt: dueMs})
	if err != nil {
		return nil, fmt.Errorf("encode body: %w", err)
	}
	httpReq := &cloudtaskspb.HttpRequest{
		HttpMethod: cloudtaskspb.HttpMethod_POST,
		Url:        s.url,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       body,
	}
	if s.account != "" {
		httpReq.AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{
			ServiceAccountEmail: s.account,
			Audience:            s.audience,
		}}
	}
	return &cloudtaskspb.CreateTaskRequest{
		Parent: queue,
		Task: &cloudtaskspb.Task{
			Name:             taskName(queue, batchID, dueMs, key),
			ScheduleTime:     timestamppb.New(time.UnixMilli(dueMs)),
			DispatchDeadline: durationpb.New(s.deadline),
			MessageType:      &cloudtaskspb.Task_HttpRequest{HttpRequest: httpReq},
		},
	}, nil
}

// Close releases the client's connection.
func (s *Scheduler) Close() error {
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("tasks: close client: %w", err)
	}
	return nil
}
