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
	// StaggerS is how long the hosts took to join, before the warm-up
	// (openLoop).
	StaggerS float64 `json:"staggerS"`
	// Costs, against the emulator (elsewhere taskOpsPerPush is null and the
	// others omitted), count what the run cost per push:
	// deliveredPerSecond, the provider requests the stand-ins accepted per
	// second of the measurement, by their receivedAt; taskOpsPerPush (0
	// when no task was made, as inline) and requestsPerPush, the Cloud Tasks
	// operations and function requests from the first request of the run
	// (stagger and warm-up included, the fleet's sign-in and registrations
	// not) until its tasks drained, per provider request accepted in that
	// time.
	costs
	// Timeline, with -timeline, sums up each second of the measurement by
	// the requests due in it, so that a stall, a checkpoint or a burst of
	// deliveries shows where it fell.
	Timeline []second `json:"timeline,omitempty"`
}

// second is one second of the timeline: the requests due in it, and the
// provider requests the emulator's stand-ins received in it, so that a
// second's tail can be set beside the deliveries that ran in it.
type second struct {
	stats
	ProviderRequests int `json:"providerRequests"`
}

func (r openReport) human() string {
	var b strings.Builder
	for i, s := range r.Timeline {
		fmt.Fprintf(&b, "\nopen regs=%d second=%d requests=%d errors=%d provider=%d latency ms %s", r.Registrations, i,
			s.Requests, s.errorCount(), s.ProviderRequests, s.Latency)
	}
	cost := ""
	if c := r.costs; c.TaskOpsPerPush != nil {
		cost = fmt.Sprintf(" delivered=%.1f/s task-ops/push=%.2f requests/push=%.2f", c.DeliveredPerSecond, *c.TaskOpsPerPush,
			c.RequestsPerPush)
	}
	return fmt.Sprintf("open regs=%d hosts=%d offered=%.1f/s achieved=%.1f/s throughput=%.1f/s requests=%d errors=%d (%s) late=%d busy=%d latency ms %s%s",
		r.Registrations, r.Hosts, r.OfferedRate, r.AchievedRate, r.Throughput, r.Requests, r.errorCount(), r.errorList(),
		r.LateStarts, r.BusyAnswers, r.Latency, cost) + b.String()
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
// whatever became of the earlier ones, and measures it from that time.
//
// The hosts join over o.stagger first (fleet.joins): a request due before
// its host joined is not sent. A fleet of desktops does
// not start in one moment, and if this one did, every registration's first
// window would open together and, each window opening at the first alert
// after the last one closed, the windows would stay in step: every batch
// due at once, a burst of deliveries each window that no fleet of
// independent desktops makes (-stagger 0 shows it). Then the warm-up's
// requests are sent and not measured, then the measurement's. At most
// o.maxInflight run at once: a request that finds them all running waits
// for one to end, and is counted late.
func (t *target) openLoop(ctx context.Context, f *fleet, o options, k int) (openReport, error) {
	ramp := int(o.rate * o.stagger.Seconds())
	warm := ramp + int(o.rate*o.warmup.Seconds())
	n := warm + int(o.rate*o.duration.Seconds())
	recs := make([]record, n)
	slots := make(chan struct{}, o.maxInflight)
	busy := t.busy.Load()
	var wg sync.WaitGroup
	late, lag, began := 0, time.Duration(0), time.Time{}
	mark, err := t.markUsage(ctx)
	if err != nil {
		return openReport{}, err
	}
	t0 := t.clock.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(float64(i) / o.rate * float64(time.Second))) }
	for i := range n {
		due, j := at(i), f.take()
		if i < ramp && due.Before(f.joins(j, t0, o.stagger)) {
			continue
		}
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
			recs[i] = t.fire(ctx, f, j, k, o.timeout, due)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return openReport{}, err
	}
	s, last := tally(recs[warm:])
	from := at(warm)
	c, err := t.costsSince(ctx, mark, from, o.duration, o.window+deliveryIdle)
	if err != nil {
		return openReport{}, err
	}
	var timeline []second
	if o.timeline {
		var err error
		if timeline, err = t.timeline(ctx, recs[warm:], o.rate, from); err != nil {
			return openReport{}, err
		}
	}
	return openReport{
		Mode: "open", Registrations: k, Hosts: len(f.hosts), OfferedRate: o.rate, DurationS: o.duration.Seconds(),
		stats: s,
		// n−warm starts take (n−warm)/rate when each is on time.
		AchievedRate: perSecond(n-warm, began.Sub(from)+at(1).Sub(t0)),
		Throughput:   perSecond(s.OK, max(o.duration, last.Sub(from))),
		LateStarts:   late, MaxStartLagMs: float64(lag) / float64(time.Millisecond),
		BusyAnswers: t.busy.Load() - busy, StaggerS: o.stagger.Seconds(), costs: c, Timeline: timeline,
	}, nil
}

// timeline sums up recs one second of their schedule at a time (bySecond)
// and counts the provider requests the stand-ins received in each second,
// from the emulator's inbox: none when the gateway has no inbox. Every
// request of the measurement has been answered, so each of its seconds has
// passed.
func (t *target) timeline(ctx context.Context, recs []record, rate float64, from time.Time) ([]second, error) {
	secs := bySecond(recs, rate)
	out := make([]second, len(secs))
	for i, s := range secs {
		out[i].stats = s
	}
	ds, _, err := t.inbox(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if ms := d.receivedAt - from.UnixMilli(); ms >= 0 && ms/1000 < int64(len(out)) {
			out[ms/1000].ProviderRequests++
		}
	}
	return out, nil
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
