package obs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/shared/obs"
)

func TestFlushWritesOneLineAndResets(t *testing.T) {
	var buf bytes.Buffer
	c := obs.NewCounters(obs.NewLogger(&buf))
	c.Flush()
	if buf.Len() != 0 {
		t.Fatalf("an empty flush wrote %q", buf.String())
	}
	c.Inc(obs.SendQueued)
	c.Add(obs.DeliverySent, 3)
	c.Flush()
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	if line["message"] != "orca_push_counters" || line[obs.SendQueued] != float64(1) || line[obs.DeliverySent] != float64(3) {
		t.Fatalf("line = %v", line)
	}
	buf.Reset()
	c.Flush()
	if buf.Len() != 0 {
		t.Fatalf("a second flush wrote %q, want nothing", buf.String())
	}
	c.Inc(obs.SendQueued)
	if got := c.Totals(); got[obs.SendQueued] != 2 || got[obs.DeliverySent] != 3 {
		t.Fatalf("Totals = %v, want what was added whatever was flushed", got)
	}
}

func TestHost(t *testing.T) {
	if got := obs.Host("D20lU_8MD0R64gLt"); got != "D20l" {
		t.Fatalf("Host = %q, want %q", got, "D20l")
	}
}

type leaky struct{}

func (leaky) Error() string { return "token=SECRET" }

func TestErrorTypeIsTheInnermostType(t *testing.T) {
	err := fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", leaky{}))
	if got := obs.ErrorType(err); got != "obs_test.leaky" {
		t.Fatalf("ErrorType = %q", got)
	}
	if got := obs.ErrorType(errors.Join(leaky{}, errors.New("x"))); got != "obs_test.leaky" {
		t.Fatalf("ErrorType(joined) = %q", got)
	}
}

// The sweep adds its zero counts every minute; an idle process must still
// write nothing, and a line that is written holds only what changed, at INFO.
func TestFlushWritesOnlyWhatChanged(t *testing.T) {
	var buf bytes.Buffer
	c := obs.NewCounters(obs.NewLogger(&buf))
	c.Add(obs.DeliveryExpired, 0)
	c.Add(obs.SweepRescheduled, 0)
	c.Flush()
	if buf.Len() != 0 {
		t.Fatalf("a flush of zeros wrote %q", buf.String())
	}
	c.Add(obs.SweepRescheduled, 0)
	c.Inc(obs.SendQueued)
	c.Flush()
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	if _, ok := line[obs.SweepRescheduled]; ok {
		t.Errorf("line = %v, holds a zero counter", line)
	}
	if line["severity"] != "INFO" || line[obs.SendQueued] != float64(1) {
		t.Errorf("line = %v, want severity INFO and %s 1", line, obs.SendQueued)
	}
}

func TestLatenessBuckets(t *testing.T) {
	tests := []struct {
		d             time.Duration
		late, latency string
	}{
		{0, obs.DeliveryLate1s, obs.AlertLatency1s},
		{time.Second, obs.DeliveryLate1s, obs.AlertLatency1s},
		{time.Second + time.Millisecond, obs.DeliveryLate5s, obs.AlertLatency5s},
		{5 * time.Second, obs.DeliveryLate5s, obs.AlertLatency5s},
		{30 * time.Second, obs.DeliveryLate30s, obs.AlertLatency30s},
		{30*time.Second + time.Millisecond, obs.DeliveryLateOver30s, obs.AlertLatencyOver30s},
		{time.Hour, obs.DeliveryLateOver30s, obs.AlertLatencyOver30s},
	}
	for _, tt := range tests {
		if got := obs.DeliveryLate(tt.d); got != tt.late {
			t.Errorf("DeliveryLate(%v) = %s, want %s", tt.d, got, tt.late)
		}
		if got := obs.AlertLatency(tt.d); got != tt.latency {
			t.Errorf("AlertLatency(%v) = %s, want %s", tt.d, got, tt.latency)
		}
	}
}

// countersLines decodes buf's counters lines.
func countersLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, text := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if text == "" {
			continue
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(text), &line); err != nil {
			t.Fatalf("not a JSON line: %q", text)
		}
		out = append(out, line)
	}
	return out
}

// TestWriteDuePacesLines: an urgent counter goes out at once and then at
// most once every UrgentEvery, a routine one at most once every
// RoutineEvery, each line carrying everything unwritten; nothing is written
// when nothing changed (issue 31 §1).
func TestWriteDuePacesLines(t *testing.T) {
	var buf bytes.Buffer
	c := obs.NewCounters(obs.NewLogger(&buf))
	t0 := time.UnixMilli(1_800_000_000_000)
	steps := []struct {
		name  string
		add   string
		at    time.Duration
		wrote bool
	}{
		{"nothing counted", "", 0, false},
		{"the first routine count", obs.DeliverySent, 0, true},
		{"a routine count within the minute", obs.DeliverySent, time.Second, false},
		{"the first urgent count, within the minute", obs.DeliveryDead, time.Second, true},
		{"another urgent one too soon", obs.DeliveryError, obs.UrgentEvery, false},
		{"it after UrgentEvery", "", time.Second + obs.UrgentEvery, true},
		{"a routine one before RoutineEvery", obs.SendQueued, obs.RoutineEvery, false},
		{"it after RoutineEvery", "", obs.RoutineEvery + time.Second + obs.UrgentEvery, true},
		{"zeros only", obs.SweepRescheduled + "=0", 3 * obs.RoutineEvery, false},
	}
	for _, s := range steps {
		switch {
		case strings.HasSuffix(s.add, "=0"):
			c.Add(strings.TrimSuffix(s.add, "=0"), 0)
		case s.add != "":
			c.Inc(s.add)
		}
		if got := c.WriteDue(t0.Add(s.at)); got != s.wrote {
			t.Errorf("%s: WriteDue(+%v) = %v, want %v", s.name, s.at, got, s.wrote)
		}
	}
	lines := countersLines(t, &buf)
	if len(lines) != 4 {
		t.Fatalf("wrote %d lines, want 4: %v", len(lines), lines)
	}
	// The urgent line carries the routine count still unwritten, so the
	// alerts' ratios (failures over outcomes) see both at once.
	if lines[1][obs.DeliveryDead] != float64(1) || lines[1][obs.DeliverySent] != float64(1) {
		t.Errorf("second line = %v, want delivery_dead 1 and delivery_sent 1", lines[1])
	}
	if lines[2][obs.DeliveryError] != float64(1) || lines[3][obs.SendQueued] != float64(1) {
		t.Errorf("lines = %v, want delivery_error 1 on the third, send_queued 1 on the fourth", lines)
	}
	if got := c.Totals(); got[obs.DeliverySent] != 2 || got[obs.SendQueued] != 1 {
		t.Errorf("Totals = %v, want every count", got)
	}
	if got := c.Consume(); got[obs.DeliveryDead] != 1 || got[obs.DeliveryError] != 1 {
		t.Errorf("Consume = %v, want what was added whatever was written", got)
	}
}

func TestUrgentCountersAreTheAlertedFailures(t *testing.T) {
	for _, name := range []string{obs.DeliveryError, obs.DeliveryDead, obs.APNSCredentialsRejected,
		obs.FCMCredentialsRejected, obs.DatabaseBusy, obs.DatabaseUnavailable, obs.PayloadUnopenable,
		obs.SweepRescheduled} {
		if !obs.Urgent(name) {
			t.Errorf("Urgent(%q) = false, want true", name)
		}
	}
	for _, name := range []string{obs.DeliverySent, obs.SendQueued, obs.ReceiptsRead} {
		if obs.Urgent(name) {
			t.Errorf("Urgent(%q) = true, want false", name)
		}
	}
}
