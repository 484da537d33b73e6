package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// openReport is one open-loop measurement.
type openReport struct {
	Mode          string  `json:"mode"`
	Registrations int     `json:"registrationsPerRequest"`
	Hosts         int     `json:"hosts"`
	OfferedRate   float64 `json:"offeredRate"`
	DurationS     float64 `json:"durationS"`
	stats
	// AchievedRate is the measured requests started per second: the
	// offered rate unless starts fell behind the schedule.
	AchievedRate float64 `json:"achievedRate"`
	// Throughput is the successful requests per second, over the measured
	// window or until the last of its answers, when later.
	Throughput float64 `json:"throughput"`
	// LateStarts counts the requests that found max-inflight requests in
	// flight and so started after their time; MaxStartLagMs is the most any
	// request started after its time. Their latency still counts from it.
	LateStarts    int     `json:"lateStarts"`
	MaxStartLagMs float64 `json:"maxStartLagMs"`
	// BusyAnswers counts the 503 answers during the measurement, warm-up
	// included, each retried by hostclient after its Retry-After.
	BusyAnswers int64 `json:"busyAnswers"`
	// Timeline, with -timeline, sums up each second of the measurement by
	// the requests due in it, so that a stall, a checkpoint or a burst of
	// deliveries shows where it fell.
	Timeline []stats `json:"timeline,omitempty"`
}

func (r openReport) human() string {
	var b strings.Builder
	for i, s := range r.Timeline {
		fmt.Fprintf(&b, "\nopen regs=%d second=%d requests=%d errors=%d latency ms %s", r.Registrations, i, s.Requests,
			s.errorCount(), s.Latency)
	}
	return fmt.Sprintf("open regs=%d hosts=%d offered=%.1f/s achieved=%.1f/s throughput=%.1f/s requests=%d errors=%d (%s) late=%d busy=%d latency ms %s",
		r.Registrations, r.Hosts, r.OfferedRate, r.AchievedRate, r.Throughput, r.Requests, r.errorCount(), r.errorList(),
		r.LateStarts, r.BusyAnswers, r.Latency) + b.String()
}

// runOpen measures the open loop at o.rate once per -regs value, from one
// fleet sized for all of them.
func (t *target) runOpen(ctx context.Context, o options) error {
	return t.withFleet(ctx, o, func(f *fleet) error {
		for _, k := range o.regs {
			r, err := t.openLoop(ctx, f, o, k)
			if err != nil {
				return err
			}
			if err := t.emit(r.human(), r); err != nil {
				return err
			}
		}
		return nil
	})
}

// openLoop starts request i at t0 + i/rate, each in its own goroutine,
// whatever became of the earlier ones, and measures it from that time. The
// first warm-up's worth are not measured. At most o.maxInflight run at
// once: a request that finds them all running waits for one to end, and is
// counted late.
func (t *target) openLoop(ctx context.Context, f *fleet, o options, k int) (openReport, error) {
	warm := int(o.rate * o.warmup.Seconds())
	n := warm + int(o.rate*o.duration.Seconds())
	recs := make([]record, n)
	slots := make(chan struct{}, o.maxInflight)
	busy := t.busy.Load()
	var wg sync.WaitGroup
	late, lag, began := 0, time.Duration(0), time.Time{}
	t0 := t.clock.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(float64(i) / o.rate * float64(time.Second))) }
	for i := range n {
		due := at(i)
		if err := sleep(ctx, due.Sub(t.clock.Now())); err != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		default:
			if i >= warm {
				late++
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		if i >= warm {
			began = t.clock.Now()
			lag = max(lag, began.Sub(due))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			recs[i] = t.fire(ctx, f, k, o.timeout, due)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return openReport{}, err
	}
	s, last := tally(recs[warm:])
	from := at(warm)
	var timeline []stats
	if o.timeline {
		timeline = bySecond(recs[warm:], o.rate)
	}
	return openReport{
		Mode: "open", Registrations: k, Hosts: len(f.hosts), OfferedRate: o.rate, DurationS: o.duration.Seconds(),
		stats: s,
		// n−warm starts take (n−warm)/rate when each is on time.
		AchievedRate: perSecond(n-warm, began.Sub(from)+at(1).Sub(t0)),
		Throughput:   perSecond(s.OK, max(o.duration, last.Sub(from))),
		LateStarts:   late, MaxStartLagMs: float64(lag) / float64(time.Millisecond),
		BusyAnswers: t.busy.Load() - busy, Timeline: timeline,
	}, nil
}

// bySecond sums up recs, record j due j/rate seconds after the first, one
// second of that schedule at a time.
func bySecond(recs []record, rate float64) []stats {
	var buckets [][]record
	for j, r := range recs {
		sec := int(float64(j) / rate)
		for len(buckets) <= sec {
			buckets = append(buckets, nil)
		}
		buckets[sec] = append(buckets[sec], r)
	}
	out := make([]stats, len(buckets))
	for i, b := range buckets {
		out[i], _ = tally(b)
	}
	return out
}
