package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"onorca.dev/push/functions/deliver"
	"onorca.dev/push/functions/routes"
	"onorca.dev/push/functions/sweep"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/service"
	"onorca.dev/push/shared/tasks/taskemu"
)

// control serves the /_emulator routes of design.md (unauthenticated, never
// rate limited, emulator only) beside the gateway's own routes.
type control struct {
	svc   *service.Service
	clock *clock.Manual // nil with the real clock
	local *local
	demo  *demoHost
	// mu guards lastSweep, the emulator time of the last sweep.
	mu        sync.Mutex
	lastSweep time.Time
	// requests counts what each function is asked (GET /_emulator/usage).
	requests requestCounts
}

// mux serves the public routes, the private functions and the control API;
// every miss answers the contract's JSON error shape.
func (c *control) mux() http.Handler {
	mux := routes.Public(c.svc)
	mux.Handle(deliverPath, deliver.Handler(c.svc))
	mux.Handle(sweepPath, sweep.Handler(c.svc))
	mux.HandleFunc("GET /_emulator/clock", c.getClock)
	mux.HandleFunc("POST /_emulator/clock", c.advanceClock)
	mux.HandleFunc("GET /_emulator/inbox", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, struct {
			Deliveries []standin.Delivery `json:"deliveries"`
		}{nonNil(c.local.standins.Inbox())})
	})
	mux.HandleFunc("DELETE /_emulator/inbox", func(w http.ResponseWriter, r *http.Request) {
		c.local.standins.ClearInbox()
		httpx.WriteEmpty(w, http.StatusNoContent)
	})
	mux.HandleFunc("POST /_emulator/faults", c.addFault)
	mux.HandleFunc("DELETE /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		if token := r.URL.Query().Get("token"); token != "" {
			c.local.standins.ClearFaultsFor(token)
		} else {
			c.local.standins.ClearFaults()
		}
		httpx.WriteEmpty(w, http.StatusNoContent)
	})
	mux.HandleFunc("GET /_emulator/tasks", c.getTasks)
	mux.HandleFunc("POST /_emulator/tasks/run-due", c.runDue)
	mux.HandleFunc("GET /_emulator/usage", c.getUsage)
	mux.HandleFunc("GET /_emulator/counters", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, struct {
			Counters map[string]int64 `json:"counters"`
		}{c.svc.Counters.Totals()})
	})
	mux.HandleFunc("POST /_emulator/demo/session", c.demoSession)
	mux.HandleFunc("GET "+consolePath+"{$}", consolePage)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, consolePath, http.StatusFound)
	})
	return c.requests.wrap(httpx.Misses(mux))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type clockReading struct {
	Now int64 `json:"now"`
}

func (c *control) getClock(w http.ResponseWriter, r *http.Request) {
	if c.clock == nil {
		http.NotFound(w, r)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, clockReading{Now: c.clock.Now().UnixMilli()})
}

// advanceClock takes {"advanceMs": n} with n ≥ 0 and only moves the clock;
// when the move crosses a minute of emulator time since the last sweep, the
// sweep runs once, as Cloud Scheduler would have called it.
func (c *control) advanceClock(w http.ResponseWriter, r *http.Request) {
	if c.clock == nil {
		http.NotFound(w, r)
		return
	}
	var req struct {
		AdvanceMs *int64 `json:"advanceMs"`
	}
	if err := decodeStrict(w, r, &req); err != nil || req.AdvanceMs == nil || *req.AdvanceMs < 0 {
		httpx.WriteError(w, contract.ErrInvalidRequest)
		return
	}
	now := c.clock.Advance(time.Duration(*req.AdvanceMs) * time.Millisecond)
	if err := c.sweepIfDue(r.Context(), now); err != nil {
		httpx.WriteError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, clockReading{Now: now.UnixMilli()})
}

// sweepIfDue runs the sweep when a minute of emulator time has passed since
// the last one.
func (c *control) sweepIfDue(ctx context.Context, now time.Time) error {
	c.mu.Lock()
	if c.lastSweep.IsZero() {
		c.lastSweep = now
	}
	due := now.Sub(c.lastSweep) >= time.Minute
	if due {
		c.lastSweep = now
	}
	c.mu.Unlock()
	if !due {
		return nil
	}
	c.requests.add("sweep")
	_, err := c.svc.Sweeper.Sweep(ctx)
	return err
}

// sweepEveryMinute calls the sweep each real minute, as Cloud Scheduler does.
// The ticker is real time: it stands in for the scheduler.
func (c *control) sweepEveryMinute(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.requests.add("sweep")
			c.svc.Sweeper.Sweep(ctx)
		}
	}
}

func (c *control) addFault(w http.ResponseWriter, r *http.Request) {
	var f standin.Fault
	if err := decodeStrict(w, r, &f); err != nil {
		httpx.WriteError(w, contract.ErrInvalidRequest)
		return
	}
	if err := c.local.standins.AddFault(f); err != nil {
		httpx.WriteError(w, contract.ErrInvalidRequest)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		OK bool `json:"ok"`
	}{true})
}

// runDue dispatches every task due at or before the clock, including those
// created meanwhile, and answers when all have finished. Under the real clock
// tasks dispatch on their own; this then only hurries what is already due.
func (c *control) runDue(w http.ResponseWriter, r *http.Request) {
	n, err := c.local.tasks.RunDue(r.Context())
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Dispatched int `json:"dispatched"`
	}{n})
}

func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// getTasks is GET /_emulator/tasks: the tasks waiting or in flight, and how
// many of them each delivery queue holds.
func (c *control) getTasks(w http.ResponseWriter, r *http.Request) {
	ts := nonNil(c.local.tasks.Tasks())
	queues := make(map[string]int, len(c.local.queues))
	for _, q := range c.local.queues {
		queues[q] = 0
	}
	for _, t := range ts {
		q, _, _ := strings.Cut(t.Name, "/tasks/")
		queues[q]++
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Tasks  []taskemu.TaskInfo `json:"tasks"`
		Queues map[string]int     `json:"queues"`
	}{ts, queues})
}
