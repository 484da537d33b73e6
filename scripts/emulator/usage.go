package main

import (
	"net/http"
	"strings"
	"sync"

	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/tasks/taskemu"
)

// requestCounts counts the requests each function would be billed for on
// Cloud Run: every request that reaches a function (answered with any
// status), by the function's name in workflows/functions.tsv, and each run
// of the sweep, which Cloud Scheduler makes a request in production. Health
// and readiness probes are left out: they are not made by pushes.
type requestCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

// functionOf names the function that serves path in production, or "" when
// none does (the emulator's own routes, the probes).
func functionOf(path string) string {
	switch {
	case path == "/v1/host/challenge":
		return "host-challenge"
	case path == "/v1/host/session":
		return "host-session"
	case path == "/v1/devices", strings.HasPrefix(path, "/v1/devices/"):
		return "devices"
	case path == "/v1/send":
		return "send"
	case path == "/v1/receipts":
		return "receipts"
	case path == deliverPath:
		return "deliver"
	case path == sweepPath:
		return "sweep"
	}
	return ""
}

// add counts one request to function.
func (c *requestCounts) add(function string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int64{}
	}
	c.n[function]++
}

// wrap counts each request h gets for a function before h serves it.
func (c *requestCounts) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := functionOf(r.URL.Path); f != "" {
			c.add(f)
		}
		h.ServeHTTP(w, r)
	})
}

// usage is GET /_emulator/usage: what a run would be billed for, counted.
type usage struct {
	// TaskOperations is every Cloud Tasks API call and dispatch attempt;
	// Tasks breaks it down.
	TaskOperations int64         `json:"taskOperations"`
	Tasks          taskemu.Usage `json:"tasks"`
	// FunctionRequests is every request to a function; Requests breaks it
	// down by function.
	FunctionRequests int64            `json:"functionRequests"`
	Requests         map[string]int64 `json:"requests"`
}

func (c *control) getUsage(w http.ResponseWriter, r *http.Request) {
	u := usage{Tasks: c.local.tasks.Usage(), Requests: map[string]int64{}}
	u.TaskOperations = u.Tasks.Operations()
	c.requests.mu.Lock()
	for f, n := range c.requests.n {
		u.Requests[f] = n
		u.FunctionRequests += n
	}
	c.requests.mu.Unlock()
	httpx.WriteJSON(w, http.StatusOK, u)
}
