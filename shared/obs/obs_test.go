package obs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	if n := c.Consume(); len(n) != 0 {
		t.Fatalf("after a flush: %v, want nothing", n)
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
