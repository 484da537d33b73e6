package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// gatewayUsage is what the emulator counted of the billed operations
// (GET /_emulator/usage): Cloud Tasks operations and function requests.
type gatewayUsage struct {
	TaskOperations   int64 `json:"taskOperations"`
	FunctionRequests int64 `json:"functionRequests"`
}

// getJSON reads path of the gateway into v. found is false when the
// gateway answers 404, as a deployed one does for the emulator's routes.
func (t *target) getJSON(ctx context.Context, path string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.gateway+path, nil)
	if err != nil {
		return false, err
	}
	resp, err := t.plain.Do(req)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("read %s: answered %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return true, nil
}

// usageMark is a reading of the gateway's counts at the start of a run:
// its usage and how far its inbox went.
type usageMark struct {
	usage gatewayUsage
	inbox int
}

// markUsage reads the counts a run's cost is measured from; nil when the
// gateway counts nothing (not the emulator).
func (t *target) markUsage(ctx context.Context) (*usageMark, error) {
	var m usageMark
	found, err := t.getJSON(ctx, "/_emulator/usage", &m.usage)
	if err != nil || !found {
		return nil, err
	}
	ds, _, err := t.inbox(ctx)
	if err != nil {
		return nil, err
	}
	m.inbox = len(ds)
	return &m, nil
}

// drain waits, polling across the process boundary, until the emulator has
// no task left or limit has passed, so that what a run's sends made is
// counted whole.
func (t *target) drain(ctx context.Context, limit time.Duration) error {
	for end := t.clock.Now().Add(limit); t.clock.Now().Before(end); {
		var tasks struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		if _, err := t.getJSON(ctx, "/_emulator/tasks", &tasks); err != nil {
			return err
		}
		if len(tasks.Tasks) == 0 {
			return nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// costs are a run's counted costs per push: per provider request the
// stand-ins accepted since m, and the accepted requests per second of the
// measurement that began at from and lasted d. TaskOpsPerPush is always in
// the report (issue 31 §5): null when it was not measured (not against the
// emulator, or no push was accepted), a number, 0 included (inline
// delivery), when it was.
type costs struct {
	DeliveredPerSecond float64  `json:"deliveredPerSecond,omitempty"`
	TaskOpsPerPush     *float64 `json:"taskOpsPerPush"`
	RequestsPerPush    float64  `json:"requestsPerPush,omitempty"`
}

// costsSince drains the emulator's tasks and counts the run since m; none
// (zero) when m is nil.
func (t *target) costsSince(ctx context.Context, m *usageMark, from time.Time, d, limit time.Duration) (costs, error) {
	if m == nil {
		return costs{}, nil
	}
	if err := t.drain(ctx, limit); err != nil {
		return costs{}, err
	}
	var u gatewayUsage
	if _, err := t.getJSON(ctx, "/_emulator/usage", &u); err != nil {
		return costs{}, err
	}
	ds, _, err := t.inbox(ctx)
	if err != nil {
		return costs{}, err
	}
	accepted, inWindow := 0, 0
	for _, x := range ds[min(m.inbox, len(ds)):] {
		if !x.accepted {
			continue
		}
		accepted++
		if ms := x.receivedAt - from.UnixMilli(); ms >= 0 && ms < d.Milliseconds() {
			inWindow++
		}
	}
	c := costs{DeliveredPerSecond: perSecond(inWindow, d)}
	if accepted > 0 {
		ops := float64(u.TaskOperations-m.usage.TaskOperations) / float64(accepted)
		c.TaskOpsPerPush = &ops
		c.RequestsPerPush = float64(u.FunctionRequests-m.usage.FunctionRequests) / float64(accepted)
	}
	return c, nil
}
