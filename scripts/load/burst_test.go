package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBurstCosts holds issue 29 §1 through the emulator process (SQLite,
// real clock, three queues): N alerts to one iPhone started together cost,
// per delivered push, at most 1.0 Cloud Tasks operation and 1.3 send and
// deliver requests at production's settings (no coalescing, inline
// delivery), and at most 2.5 and 2.5 on the task path (no coalescing, no
// inline), for N = 10 and 20. It counts; it does not time. Every alert
// reaches the stand-in.
//
// Inline delivery stops at a wall-clock budget (delivery.InlineBudget, 1 s
// a request): on a machine so loaded that a burst's hand-on outlasts it (CI
// runs every package's tests at once, under the race detector), the rest
// go to tasks and the counts rise with the machine's load, not the design's
// (it failed once so: 1.6 requests a push, where alone it counts 1.3 at
// most). So a burst over the limits runs once more, and the test fails only
// when both runs are over: a design that costs more is over in both.
func TestBurstCosts(t *testing.T) {
	tests := []struct {
		name            string
		env             []string
		maxOps, maxReqs float64
	}{
		{"production", []string{"ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_DELIVER_INLINE=1"}, 1.0, 1.3},
		{"task path", []string{"ORCA_PUSH_COALESCE_MS=0"}, 2.5, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustEmulatorWith(t, []string{"-queues", "3"}, tt.env...)
			var over []string
			for attempt := 1; attempt <= 2; attempt++ {
				over = burstsOver(t, f.origin(), tt.maxOps, tt.maxReqs)
				if len(over) == 0 {
					return
				}
				t.Logf("run %d over the limits: %s", attempt, strings.Join(over, "; "))
			}
			t.Errorf("both runs over the limits; the second: %s", strings.Join(over, "; "))
		})
	}
}

// burstsOver runs load burst of 10 and 20 alerts against gateway and
// returns what each burst's report breaks of the limits (every alert
// delivered in at most as many pushes, at most maxOps task operations and
// maxReqs requests a push). A run that fails, or reports anything but two
// bursts, fails t.
func burstsOver(t *testing.T, gateway string, maxOps, maxReqs float64) []string {
	t.Helper()
	var b bytes.Buffer
	err := run(context.Background(), []string{"burst", "-gateway", gateway, "-alerts", "10,20"}, getenv, &b)
	t.Logf("load burst:\n%s", b.String())
	if err != nil {
		t.Fatalf("run = %v", err)
	}
	var got []burstReport
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var r burstReport
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &r) == nil && r.Mode == "burst" {
			got = append(got, r)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d burst reports, want 2", len(got))
	}
	var over []string
	for _, r := range got {
		// An alert may join a batch of the burst that has not gone
		// yet, so a push may carry more than one.
		if r.Missing != 0 || r.Delivered < 1 || r.Delivered > r.Alerts || r.TaskOpsPerPush > maxOps || r.RequestsPerPush > maxReqs {
			over = append(over, fmt.Sprintf("burst of %d: %+v; want every alert delivered in at most %d pushes, at most %.1f task operations and %.1f requests per push",
				r.Alerts, r, r.Alerts, maxOps, maxReqs))
		}
	}
	return over
}
