package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"onorca.dev/push/shared/contract"
)

// burstReport is what a burst of alerts to one phone cost (issue 29 §1):
// Cloud Tasks operations and function requests (send and deliver) per push
// the stand-in accepted, as the emulator counted them.
type burstReport struct {
	Mode   string `json:"mode"`
	Alerts int    `json:"alerts"`
	// Delivered counts the pushes the stand-in accepted for the phone;
	// Missing the alerts none of them carried within the wait.
	Delivered       int     `json:"delivered"`
	Missing         int     `json:"missing"`
	TaskOpsPerPush  float64 `json:"taskOpsPerPush"`
	RequestsPerPush float64 `json:"requestsPerPush"`
}

// burstWait bounds how long a burst waits for its pushes and the tasks it
// made: past the hand-on's chain budget and the sweep's rescue.
const burstWait = 90 * time.Second

// runBurst sends, for each count of -alerts, that many alerts to one iPhone
// of a fresh host, all started together (as an agent finishing several
// panes at once does), waits until the stand-in has them and no task is
// left, and reports the counted costs per push. It needs the emulator's
// /_emulator/usage and inbox.
func (t *target) runBurst(ctx context.Context, o options) error {
	f, err := t.provision(ctx, len(o.bursts), 1)
	if err != nil {
		return err
	}
	for i, n := range o.bursts {
		r, err := t.burst(ctx, f.hosts[i], i, n)
		if err != nil {
			return err
		}
		human := fmt.Sprintf("burst alerts=%d delivered=%d missing=%d task operations per push=%.2f requests per push=%.2f",
			r.Alerts, r.Delivered, r.Missing, r.TaskOpsPerPush, r.RequestsPerPush)
		if err := t.emit(human, r); err != nil {
			return err
		}
		if r.Missing > 0 {
			return fmt.Errorf("burst of %d: %d alerts never reached the stand-in", n, r.Missing)
		}
	}
	return nil
}

// burst sends n alerts from h to its phone at once and measures them.
func (t *target) burst(ctx context.Context, h *host, tag, n int) (burstReport, error) {
	r := burstReport{Mode: "burst", Alerts: n}
	m, err := t.markUsage(ctx)
	if err != nil {
		return r, err
	}
	if m == nil {
		return r, fmt.Errorf("burst needs the emulator's /_emulator/usage")
	}
	ids := make(map[string]bool, n)
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		id := "burst-" + strconv.Itoa(tag) + "-" + strconv.Itoa(i)
		ids[id] = true
		g.Go(func() error {
			res, err := h.client.Send(gctx, h.regs, contract.Notification{NotificationID: id, Seq: int64(i), Epoch: "burst",
				Source: contract.SourcePlugin, AgentState: contract.AgentFinished, Title: "Load", Body: id})
			if fail := classify(res, err, 1); fail != "" {
				return fmt.Errorf("send: %s: %w", fail, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return r, err
	}
	// The alerts a push carried, by id; a summary carries its members'
	// count under the last id.
	for end := t.clock.Now().Add(burstWait); ; {
		ds, _, err := t.inbox(ctx)
		if err != nil {
			return r, err
		}
		carried := 0
		for _, d := range ds[min(m.inbox, len(ds)):] {
			if d.accepted && d.token == h.tokens[0] && ids[d.id] {
				carried += max(d.alerts, 1)
			}
		}
		r.Missing = max(n-carried, 0)
		if r.Missing == 0 || !t.clock.Now().Before(end) {
			break
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return r, err
		}
	}
	c, err := t.costsSince(ctx, m, t.clock.Now(), 0, burstWait)
	if err != nil {
		return r, err
	}
	ds, _, err := t.inbox(ctx)
	if err != nil {
		return r, err
	}
	for _, d := range ds[min(m.inbox, len(ds)):] {
		if d.accepted {
			r.Delivered++
		}
	}
	if c.TaskOpsPerPush == nil {
		// A burst is there to count them: a run that could not is no report.
		return r, fmt.Errorf("burst of %d: the emulator's usage counted no task operations", n)
	}
	r.TaskOpsPerPush, r.RequestsPerPush = *c.TaskOpsPerPush, c.RequestsPerPush
	return r, nil
}
