package taskemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
)

// The fake bearer tokens the emulator sends in place of the Google-signed
// tokens Cloud Tasks would mint. They prove nothing; a target run against the
// emulator may accept them only when it is configured for the emulator.
const (
	// OIDCTokenPrefix starts the bearer token of a task with an OIDC token:
	// "Authorization: Bearer emulator-oidc.<audience>", where the audience
	// defaults to the task's URL as in Cloud Tasks.
	OIDCTokenPrefix = "emulator-oidc."
	// OAuthTokenPrefix starts the bearer token of a task with an OAuth token:
	// "Authorization: Bearer emulator-oauth.<scope>".
	OAuthTokenPrefix = "emulator-oauth."
)

// maxIdleWait bounds how long the real-clock dispatcher waits before it reads
// the clock again, so a clock that jumps (a wall-clock step, or a manual
// clock used without Options.Manual) is noticed within a second.
const maxIdleWait = time.Second

// maxDrain bounds how much of an answer's body is read before the connection
// is given back.
const maxDrain = 64 << 10

// RunDue dispatches every task due at or before the clock's reading, keeping
// at most 8 attempts in flight (or each queue's Options.MaxConcurrent). It goes on until nothing due is left or in
// flight, so tasks that targets create while it runs, and retries, are run
// too when they are due by then. It returns the number of attempts made. If
// ctx ends, attempts in flight are cancelled (and count as failed) and the
// error wraps ctx's. It returns [ErrClosed] after [Emulator.Close].
func (e *Emulator) RunDue(ctx context.Context) (int, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	done := make(chan struct{}, e.loopLimit())
	n, inflight := 0, 0
	for {
		if ctx.Err() == nil {
			e.mu.Lock()
			cs, _, _ := e.claimDueLocked(e.clock.Now(), e.loopLimit()-inflight)
			e.mu.Unlock()
			for _, c := range cs {
				n++
				inflight++
				go func() {
					e.attempt(ctx, c)
					done <- struct{}{}
				}()
			}
		}
		if inflight == 0 {
			break
		}
		<-done
		inflight--
	}
	if err := ctx.Err(); err != nil {
		return n, fmt.Errorf("taskemu: run due: %w", err)
	}
	return n, nil
}

// dispatchLoop runs tasks at their schedule time under a real clock, until
// e.ctx ends.
func (e *Emulator) dispatchLoop() {
	defer close(e.loopDone)
	done := make(chan struct{}, e.loopLimit())
	inflight := 0
	for {
		e.mu.Lock()
		now := e.clock.Now()
		cs, throttled, full := e.claimDueLocked(now, e.loopLimit()-inflight)
		wait := maxIdleWait
		switch {
		case throttled:
			// A due task waits for its queue's token, which comes
			// within 1/rate.
			wait = time.Duration(float64(time.Second) / e.rate)
		case full:
			// A due task waits for its queue's attempts; look again
			// soon, and at once when one ends (done).
			wait = 10 * time.Millisecond
		case len(e.pending) > 0 && inflight+len(cs) < e.loopLimit():
			wait = min(wait, e.pending[0].due.Sub(now))
		}
		e.mu.Unlock()
		for _, c := range cs {
			inflight++
			go func() {
				e.attempt(e.ctx, c)
				done <- struct{}{}
			}()
		}
		// A real-time wait until the next task is due: with the real clock
		// the emulator, like Cloud Tasks, carries time (style.md §6.1).
		timer := time.NewTimer(wait)
		select {
		case <-e.ctx.Done():
			timer.Stop()
			return
		case <-e.wake:
		case <-done:
			inflight--
		case <-timer.C:
		}
		timer.Stop()
	}
}

// attempt sends c's task once and records the outcome. It calls e.wg.Done.
// The attempt ends at the task's dispatch deadline, when ctx ends, or when
// the emulator closes.
func (e *Emulator) attempt(ctx context.Context, c claim) {
	defer e.wg.Done()
	ctx, cancel := context.WithTimeout(ctx, c.snapshot.GetDispatchDeadline().AsDuration())
	defer cancel()
	stop := context.AfterFunc(e.ctx, cancel)
	defer stop()
	httpStatus, code := e.send(ctx, c.snapshot)
	e.finish(c, httpStatus, code)
}

// send makes t's HTTP request. It returns the answer's status, or 0 and the
// RPC code Cloud Tasks would record when no answer came.
func (e *Emulator) send(ctx context.Context, t *cloudtaskspb.Task) (int, codes.Code) {
	hr := t.GetHttpRequest()
	req, err := http.NewRequestWithContext(ctx, hr.GetHttpMethod().String(), hr.GetUrl(), bytes.NewReader(hr.GetBody()))
	if err != nil {
		return 0, codes.InvalidArgument
	}
	setHeaders(req.Header, t)
	resp, err := e.client.Do(req)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return 0, codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return 0, codes.Canceled
	case err != nil:
		return 0, codes.Unavailable
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	resp.Body.Close()
	return resp.StatusCode, codes.OK
}

// setHeaders writes the task's headers, then those Cloud Tasks adds to every
// HTTP task ("Reading the Cloud Tasks request headers" in the Cloud Tasks
// docs), then the fake authorization.
func setHeaders(h http.Header, t *cloudtaskspb.Task) {
	hr := t.GetHttpRequest()
	for k, v := range hr.GetHeaders() {
		h.Set(k, v)
	}
	if len(hr.GetBody()) > 0 && h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/octet-stream")
	}
	queue, id, _ := strings.Cut(t.GetName(), "/tasks/")
	h.Set("User-Agent", "Google-Cloud-Tasks")
	h.Set("X-CloudTasks-QueueName", queue[strings.LastIndexByte(queue, '/')+1:])
	h.Set("X-CloudTasks-TaskName", id)
	h.Set("X-CloudTasks-TaskRetryCount", strconv.Itoa(int(t.GetDispatchCount())-1))
	h.Set("X-CloudTasks-TaskExecutionCount", strconv.Itoa(int(t.GetResponseCount())))
	h.Set("X-CloudTasks-TaskETA", strconv.FormatFloat(float64(t.GetScheduleTime().AsTime().UnixMicro())/1e6, 'f', 6, 64))
	switch auth := hr.GetAuthorizationHeader().(type) {
	case *cloudtaskspb.HttpRequest_OidcToken:
		aud := auth.OidcToken.GetAudience()
		if aud == "" {
			aud = hr.GetUrl()
		}
		h.Set("Authorization", "Bearer "+OIDCTokenPrefix+aud)
	case *cloudtaskspb.HttpRequest_OauthToken:
		scope := auth.OauthToken.GetScope()
		if scope == "" {
			scope = "https://www.googleapis.com/auth/cloud-platform"
		}
		h.Set("Authorization", "Bearer "+OAuthTokenPrefix+scope)
	}
}
