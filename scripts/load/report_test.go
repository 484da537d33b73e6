package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCostsAlwaysInTheReport: taskOpsPerPush is in every open report's
// JSON, null when it was not measured and 0 when inline delivery made no
// task operation, so a reader can tell the two apart (issue 31 §5).
func TestCostsAlwaysInTheReport(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name  string
		c     costs
		want  string
		human string
	}{
		{"not measured", costs{}, `"taskOpsPerPush":null`, ""},
		{"measured, none", costs{DeliveredPerSecond: 20, TaskOpsPerPush: &zero, RequestsPerPush: 1},
			`"taskOpsPerPush":0`, "task-ops/push=0.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openReport{stats: stats{Errors: map[string]int{}}, costs: tt.c}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("report = %s, want it to hold %s", b, tt.want)
			}
			if got := r.human(); !strings.Contains(got, tt.human) || tt.human == "" && strings.Contains(got, "task-ops") {
				t.Errorf("human line = %q, want task-ops only when measured (%q)", got, tt.human)
			}
		})
	}
}
