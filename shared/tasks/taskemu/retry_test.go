package taskemu

import (
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestBackoff(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		cfg  RetryConfig
		want []time.Duration // after failures 1, 2, …
	}{
		{"defaults", RetryConfig{MinBackoff: s, MaxBackoff: 30 * s, MaxDoublings: 16},
			[]time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s}},
		{"linear after doublings (queue.proto example)", RetryConfig{MinBackoff: 10 * s, MaxBackoff: 300 * s, MaxDoublings: 3},
			[]time.Duration{10 * s, 20 * s, 40 * s, 80 * s, 160 * s, 240 * s, 300 * s, 300 * s}},
		{"no doubling", RetryConfig{MinBackoff: s, MaxBackoff: 3 * s, MaxDoublings: 0},
			[]time.Duration{1 * s, 2 * s, 3 * s, 3 * s}},
		{"zero min", RetryConfig{MinBackoff: 0, MaxBackoff: s, MaxDoublings: 2},
			[]time.Duration{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []time.Duration
			for f := 1; f <= len(tt.want); f++ {
				got = append(got, tt.cfg.backoff(f))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("backoff(1…%d) (-want +got):\n%s", len(tt.want), diff)
			}
		})
	}
	if got := (RetryConfig{MinBackoff: s, MaxBackoff: time.Hour, MaxDoublings: 16}).backoff(1000); got != time.Hour {
		t.Errorf("backoff(1000) = %v, want the 1h cap", got)
	}
}

func TestRetryConfigDefaultsAndOverrides(t *testing.T) {
	got, err := RetryConfig{MaxAttempts: 3}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := RetryConfig{MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff, MaxDoublings: DefaultMaxDoublings, MaxAttempts: 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withDefaults() (-want +got):\n%s", diff)
	}
	over := got.forTask(&cloudtaskspb.RetryConfig{MaxAttempts: -1, MinBackoff: durationpb.New(2 * time.Second)})
	if over.MaxAttempts != -1 || over.MinBackoff != 2*time.Second || over.MaxBackoff != DefaultMaxBackoff {
		t.Errorf("forTask() = %+v, want unlimited attempts, min 2s, max unchanged", over)
	}
	if over.exhausted(1_000_000) {
		t.Errorf("exhausted(1e6) with unlimited attempts = true, want false")
	}
	if !got.exhausted(3) || got.exhausted(2) {
		t.Errorf("exhausted(3), exhausted(2) with 3 attempts = %v, %v, want true, false", got.exhausted(3), got.exhausted(2))
	}
}
