package main

import (
	"fmt"
	"net/http"
	"testing"

	"onorca.dev/push/shared/store/storetest"
)

// TestUsageCountsAPush counts what one push costs through the emulator, with
// no coalescing (production's setting) and one registration per request.
// Through a task, a push is a Cloud Tasks create and its dispatch, and two
// function requests (the send and the deliver). Delivered inline
// (ORCA_PUSH_DELIVER_INLINE=1, production's setting) it is the send request
// alone: no task operation, one request, under the goals of issue "past one
// queue" (at most 0.5 task operations and 1.3 requests per push).
func TestUsageCountsAPush(t *testing.T) {
	tests := []struct {
		name          string
		env           []string
		ops, requests int64 // per push
		delivers      int64 // per push
	}{
		{"task", []string{"ORCA_PUSH_COALESCE_MS=0"}, 2, 2, 1},
		{"inline", []string{"ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_DELIVER_INLINE=1"}, 0, 1, 0},
	}
	for _, d := range storetest.Dialects(t) {
		for _, tt := range tests {
			t.Run(d.Name+"/"+tt.name, func(t *testing.T) {
				e := startEmu(t, d, tt.env...)
				const pushes = 10
				var regs []string
				for i := range pushes {
					reg, _ := e.registerPhone(fmt.Sprint("phone-", i))
					regs = append(regs, reg)
				}
				var before usage
				e.call("GET", "/_emulator/usage", "", &before)
				for i, reg := range regs {
					e.sendTo(alert(fmt.Sprint("n", i), int64(i+1)), reg)
				}
				e.advance(0)
				accepted := 0
				for _, d := range e.inbox() {
					if d.Status == http.StatusOK {
						accepted++
					}
				}
				if accepted != pushes {
					t.Fatalf("%d pushes accepted, want %d", accepted, pushes)
				}
				var after usage
				e.call("GET", "/_emulator/usage", "", &after)
				ops := after.TaskOperations - before.TaskOperations
				reqs := after.FunctionRequests - before.FunctionRequests
				if ops != tt.ops*pushes || reqs != tt.requests*pushes {
					t.Fatalf("per push: %.2f task operations, %.2f function requests (%+v), want %d and %d",
						float64(ops)/pushes, float64(reqs)/pushes, after, tt.ops, tt.requests)
				}
				if after.Requests["send"]-before.Requests["send"] != pushes ||
					after.Requests["deliver"]-before.Requests["deliver"] != tt.delivers*pushes {
					t.Fatalf("requests by function %v before %v, want %d sends and %d delivers", after.Requests, before.Requests,
						pushes, tt.delivers*pushes)
				}
			})
		}
	}
}
