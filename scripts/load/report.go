package main

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// latency is a set of latencies in milliseconds: nearest-rank percentiles
// of the recorded values, sorted.
type latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99.9"`
	Max  float64 `json:"max"`
}

func summarize(ms []float64) latency {
	slices.Sort(ms)
	return latency{P50: rank(ms, 0.5), P90: rank(ms, 0.9), P99: rank(ms, 0.99), P999: rank(ms, 0.999), Max: rank(ms, 1)}
}

// rank returns the nearest-rank p-quantile of sorted: the smallest value
// that at least p of the values do not exceed.
func rank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (l latency) String() string {
	return fmt.Sprintf("p50=%.1f p90=%.1f p99=%.1f p99.9=%.1f max=%.1f", l.P50, l.P90, l.P99, l.P999, l.Max)
}

// stats sums up requests: how many, how many had every registration
// queued, the others by failure, and the latency of the successful ones
// (from each record's start to its answer).
type stats struct {
	Requests int            `json:"requests"`
	OK       int            `json:"ok"`
	Errors   map[string]int `json:"errors"`
	Latency  latency        `json:"latencyMs"`
}

// tally sums up recs and returns when the last answer came.
func tally(recs []record) (stats, time.Time) {
	s := stats{Requests: len(recs), Errors: map[string]int{}}
	var ms []float64
	var last time.Time
	for _, r := range recs {
		if r.done.After(last) {
			last = r.done
		}
		if r.fail != "" {
			s.Errors[r.fail]++
			continue
		}
		s.OK++
		ms = append(ms, float64(r.done.Sub(r.start))/float64(time.Millisecond))
	}
	s.Latency = summarize(ms)
	return s, last
}

// errorCount returns how many requests failed.
func (s stats) errorCount() int { return s.Requests - s.OK }

// errorList writes the failures as "kind=n,…", or "none".
func (s stats) errorList() string {
	if len(s.Errors) == 0 {
		return "none"
	}
	var parts []string
	for k, n := range s.Errors {
		parts = append(parts, fmt.Sprintf("%s=%d", k, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// emit prints a measurement as its human line, then as one line of JSON.
func (t *target) emit(human string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(t.stdout, "%s\n%s\n", human, b)
	return err
}

// perSecond returns n per second of d, 0 for an empty d.
func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
