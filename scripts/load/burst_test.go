package main

import (
	"bytes"
	"context"
	"encoding/json"
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
			var b bytes.Buffer
			err := run(context.Background(), []string{"burst", "-gateway", f.origin(), "-alerts", "10,20"}, getenv, &b)
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
			for _, r := range got {
				// An alert may join a batch of the burst that has not
				// gone yet, so a push may carry more than one.
				if r.Missing != 0 || r.Delivered < 1 || r.Delivered > r.Alerts || r.TaskOpsPerPush > tt.maxOps || r.RequestsPerPush > tt.maxReqs {
					t.Errorf("burst of %d: %+v; want every alert delivered in at most %d pushes, at most %.1f task operations and %.1f requests per push",
						r.Alerts, r, r.Alerts, tt.maxOps, tt.maxReqs)
				}
			}
		})
	}
}
