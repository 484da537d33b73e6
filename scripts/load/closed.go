package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// defaultHosts is how many hosts closed and open send from unless -hosts
// says otherwise (open takes more when its rate or length needs them). The
// two modes spread their load alike so their numbers compare: how many
// alerts coalesce into one delivery depends on each phone's rate. 400 hosts
// carry 400 × contract.AlertQuota requests, minutes at the emulator's pace,
// each host well under its bucket's refill rate.
const defaultHosts = 400

// closedStep is one closed-loop measurement: c workers, each sending its
// next request as soon as the previous one is answered.
type closedStep struct {
	Concurrency int `json:"concurrency"`
	stats
	// Rate is the successful requests per second.
	Rate        float64 `json:"rate"`
	BusyAnswers int64   `json:"busyAnswers"`
	// Truncated says every host had started its alert quota before the
	// step's end; the step then ends early and Rate covers what it ran.
	Truncated bool `json:"truncated"`
}

// closedReport is the closed loop at each concurrency for one -regs value,
// and the highest rate among them.
type closedReport struct {
	Mode          string       `json:"mode"`
	Registrations int          `json:"registrationsPerRequest"`
	Hosts         int          `json:"hosts"`
	DurationS     float64      `json:"durationS"`
	Steps         []closedStep `json:"steps"`
	MaxRate       float64      `json:"maxRate"`
	MaxAt         int          `json:"maxAtConcurrency"`
}

// runClosed measures the closed loop at each -concurrency for each -regs,
// from one fleet.
func (t *target) runClosed(ctx context.Context, o options) error {
	return t.withFleet(ctx, o, func(f *fleet) error { return t.closedSteps(ctx, f, o) })
}

// closedSteps runs runClosed's measurements on f.
func (t *target) closedSteps(ctx context.Context, f *fleet, o options) error {
	for _, k := range o.regs {
		r := closedReport{Mode: "closed", Registrations: k, Hosts: o.hosts, DurationS: o.duration.Seconds()}
		for _, c := range o.concurrency {
			s, err := t.closedLoop(ctx, f, o, k, c)
			if err != nil {
				return err
			}
			r.Steps = append(r.Steps, s)
			if s.Rate > r.MaxRate {
				r.MaxRate, r.MaxAt = s.Rate, c
			}
			line := fmt.Sprintf("closed regs=%d concurrency=%d rate=%.1f/s requests=%d errors=%d (%s) busy=%d latency ms %s",
				k, c, s.Rate, s.Requests, s.errorCount(), s.errorList(), s.BusyAnswers, s.Latency)
			if s.Truncated {
				line += " (truncated: every host spent its alert quota; raise -hosts)"
			}
			fmt.Fprintln(t.stdout, line)
		}
		human := fmt.Sprintf("closed regs=%d maximum %.1f/s at concurrency %d; the open-loop goal is stated at half: open -regs %d -rate %.0f",
			k, r.MaxRate, r.MaxAt, k, r.MaxRate/2)
		if err := t.emit(human, r); err != nil {
			return err
		}
	}
	return nil
}

// closedLoop runs c workers for the warm-up and then the duration, and
// measures the requests started after the warm-up.
func (t *target) closedLoop(ctx context.Context, f *fleet, o options, k, c int) (closedStep, error) {
	busy := t.busy.Load()
	from := t.clock.Now().Add(o.warmup)
	until := from.Add(o.duration)
	recs := make([][]record, c)
	var truncated atomic.Bool
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			for now := t.clock.Now(); now.Before(until) && ctx.Err() == nil; now = t.clock.Now() {
				r := t.fire(ctx, f, f.take(), k, o.timeout, now)
				if r.fail == errNoQuota {
					truncated.Store(true)
					return
				}
				if !now.Before(from) {
					recs[w] = append(recs[w], r)
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return closedStep{}, err
	}
	var all []record
	for _, rs := range recs {
		all = append(all, rs...)
	}
	s, last := tally(all)
	return closedStep{Concurrency: c, stats: s, Rate: perSecond(s.OK, last.Sub(from)),
		BusyAnswers: t.busy.Load() - busy, Truncated: truncated.Load()}, nil
}
