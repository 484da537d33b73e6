package push_test

import (
	"math"
	"testing"
	"time"

	"onorca.dev/push/shared/push"
)

func TestOutcomeKindString(t *testing.T) {
	tests := []struct {
		k    push.OutcomeKind
		want string
	}{
		{push.Sent, "sent"},
		{push.Dead, "dead"},
		{push.Retry, "retry"},
		{push.Terminal, "terminal"},
		{0, "OutcomeKind(0)"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("OutcomeKind(%d).String() = %q, want %q", tt.k, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"seconds", "120", 120 * time.Second, true},
		{"fraction", "1.5", 1500 * time.Millisecond, true},
		{"zero", "0", 0, true},
		{"date ahead", "Fri, 15 Jan 2027 08:01:30 GMT", 90 * time.Second, true},
		{"date past clamps", "Fri, 15 Jan 2027 07:00:00 GMT", 0, true},
		{"negative", "-5", 0, false},
		{"garbage", "soon", 0, false},
		{"empty", "", 0, false},
		{"huge", "1e30", time.Duration(math.MaxInt64), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := push.ParseRetryAfter(tt.v, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %t, want %v, %t", tt.v, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
