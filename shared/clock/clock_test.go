package clock_test

import (
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
)

func TestManual(t *testing.T) {
	start := time.UnixMilli(1_800_000_000_000)
	m := clock.NewManual(start)
	if got := clock.Millis(m); got != start.UnixMilli() {
		t.Fatalf("Millis() = %d, want %d", got, start.UnixMilli())
	}
	m.Advance(1500 * time.Millisecond)
	m.Advance(-time.Hour)
	if got, want := m.Now(), start.Add(1500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after Advance: Now() = %v, want %v", got, want)
	}
	m.Set(start)
	if !m.Now().Equal(start) {
		t.Fatalf("after Set: Now() = %v, want %v", m.Now(), start)
	}
}
