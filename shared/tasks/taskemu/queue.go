package taskemu

import (
	"container/heap"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// task is one stored task. Its fields are guarded by Emulator.mu.
type task struct {
	pb         *cloudtaskspb.Task // output-only fields kept up to date
	due        time.Time          // pb.ScheduleTime, the heap key
	index      int                // position in Emulator.pending; -1 while running
	lastStatus int                // HTTP status of the last answer, 0 when none
}

// taskHeap orders waiting tasks by due time, then name, so dispatch order is
// deterministic.
type taskHeap []*task

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].pb.GetName() < h[j].pb.GetName()
}
func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *taskHeap) Push(x any) {
	t := x.(*task)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// claim is one dispatch attempt: the task and a snapshot of what to send,
// taken under the lock so the attempt runs without it.
type claim struct {
	t        *task
	snapshot *cloudtaskspb.Task // the task as dispatched
	retry    RetryConfig
}

// claimDueLocked takes up to limit waiting tasks due at or before now off the
// heap and starts an attempt for each. A closed or paused emulator claims
// nothing.
//
// With a rate, a task whose queue has no token left waits on the heap while
// other queues' due tasks go; throttled reports that one waited, so that the
// dispatcher looks again when a token has come, and full that one waited for
// its queue's attempts in flight.
//
// With a per-queue limit of attempts in flight, a task whose queue is full
// waits too, until one of the queue's attempts ends.
//
// One pass sets aside at most maxHeld waiting tasks, so that a backlog of
// thousands in a throttled queue is not popped and pushed back every few
// milliseconds. The price: another queue's due tasks behind more than
// maxHeld waiting ones wait for that backlog to thin, where real queues are
// independent. Tasks of queues that share the load by a hash are
// interleaved in due order, so this takes a backlog of one queue alone.
func (e *Emulator) claimDueLocked(now time.Time, limit int) (cs []claim, throttled, full bool) {
	var held []*task
	for len(cs) < limit && len(held) < maxHeld && len(e.pending) > 0 && !e.closed && !e.paused &&
		!e.pending[0].due.After(now) {
		t := heap.Pop(&e.pending).(*task)
		q := queueOf(t.pb.GetName())
		if e.maxConc > 0 && e.inflight[q] >= e.maxConc {
			held = append(held, t)
			full = true
			continue
		}
		if !e.allowLocked(q, now) {
			held = append(held, t)
			throttled = true
			continue
		}
		cs = append(cs, e.startLocked(t, now))
	}
	for _, t := range held {
		heap.Push(&e.pending, t)
	}
	return cs, throttled, full
}

// maxHeld bounds the waiting tasks one claim pass sets aside.
const maxHeld = 256

// allowLocked takes a dispatch token of queue at now; it always succeeds
// without a rate.
func (e *Emulator) allowLocked(queue string, now time.Time) bool {
	if e.rate == 0 {
		return true
	}
	l, ok := e.limiters[queue]
	if !ok {
		l = rate.NewLimiter(rate.Limit(e.rate), max(1, int(e.rate)))
		e.limiters[queue] = l
	}
	return l.AllowN(now, 1)
}

// queueOf returns the queue of a full task name.
func queueOf(name string) string {
	q, _, _ := strings.Cut(name, "/tasks/")
	return q
}

// startLocked marks t as dispatched at now; t must be off the heap. The
// caller must run the returned claim with [Emulator.attempt], which calls
// e.wg.Done.
func (e *Emulator) startLocked(t *task, now time.Time) claim {
	e.wg.Add(1)
	e.usage.Dispatches++
	e.inflight[queueOf(t.pb.GetName())]++
	ts := timestamppb.New(now)
	t.pb.DispatchCount++
	if t.pb.FirstAttempt == nil {
		// Cloud Tasks keeps only the first attempt's dispatch time.
		t.pb.FirstAttempt = &cloudtaskspb.Attempt{DispatchTime: ts}
	}
	t.pb.LastAttempt = &cloudtaskspb.Attempt{ScheduleTime: t.pb.GetScheduleTime(), DispatchTime: ts}
	return claim{
		t:        t,
		snapshot: proto.Clone(t.pb).(*cloudtaskspb.Task),
		retry:    e.retry.forTask(t.pb.GetRetryConfig()),
	}
}

// finish records the outcome of c's attempt: httpStatus is the answer's
// status, or 0 when code says why there was none. A 2xx completes the task; a
// failure schedules a retry or, once the attempts are spent, drops the task.
func (e *Emulator) finish(c claim, httpStatus int, code codes.Code) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := c.t
	e.inflight[queueOf(t.pb.GetName())]--
	if e.tasks[t.pb.GetName()] != t {
		return // deleted while in flight
	}
	now := e.clock.Now()
	if httpStatus != 0 {
		t.pb.ResponseCount++
		t.lastStatus = httpStatus
		code = httpCode(httpStatus)
	}
	t.pb.LastAttempt.ResponseTime = timestamppb.New(now)
	t.pb.LastAttempt.ResponseStatus = status.New(code, code.String()).Proto()
	switch {
	case code == codes.OK:
		e.removeLocked(t, now)
	case c.retry.exhausted(int(t.pb.GetDispatchCount())):
		e.removeLocked(t, now)
		e.failed = append(e.failed, info(t))
	default:
		t.due = now.Add(c.retry.backoff(int(t.pb.GetDispatchCount())))
		t.pb.ScheduleTime = timestamppb.New(t.due)
		heap.Push(&e.pending, t)
	}
	e.poke()
}

// removeLocked forgets t and reserves its name for [nameReuseDelay].
func (e *Emulator) removeLocked(t *task, now time.Time) {
	if t.index >= 0 {
		heap.Remove(&e.pending, t.index)
	}
	delete(e.tasks, t.pb.GetName())
	e.used[t.pb.GetName()] = now
}

// httpCode maps an HTTP status to the RPC code Cloud Tasks records in
// Attempt.response_status (the standard google.rpc.Code mapping).
func httpCode(s int) codes.Code {
	switch {
	case s >= 200 && s < 300:
		return codes.OK
	case s == 400:
		return codes.InvalidArgument
	case s == 401:
		return codes.Unauthenticated
	case s == 403:
		return codes.PermissionDenied
	case s == 404:
		return codes.NotFound
	case s == 409:
		return codes.Aborted
	case s == 429:
		return codes.ResourceExhausted
	case s == 501:
		return codes.Unimplemented
	case s == 503:
		return codes.Unavailable
	case s == 504:
		return codes.DeadlineExceeded
	case s >= 500:
		return codes.Internal
	}
	return codes.Unknown
}
