package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"onorca.dev/push/shared/contract"
)

// loneReport is the lone-alert delivery latency: from just before POST
// /v1/send to the stand-in accepting the provider request, minus the
// coalescing window.
type loneReport struct {
	Mode   string `json:"mode"`
	Hosts  int    `json:"hosts"`
	Alerts int    `json:"alerts"`
	// Delivered counts the alerts a stand-in accepted; Missing the others.
	Delivered int `json:"delivered"`
	Missing   int `json:"missing"`
	// ProviderFailed counts the provider requests for these alerts that a
	// stand-in answered with anything but 200 (or not at all).
	ProviderFailed int     `json:"providerFailed"`
	Latency        latency `json:"latencyBeyondWindowMs"`
}

// sent is when one alert left, keyed by its device token and id.
type sent struct {
	token, id string
	at        int64
}

// runLone has each host register one iPhone and send o.alerts alerts one at
// a time, each after the previous one's window closed, so every alert is
// delivered alone; then it reads the inbox.
func (t *target) runLone(ctx context.Context, o options) error {
	f, err := t.provision(ctx, o.hosts, 1)
	if err != nil {
		return err
	}
	all := make([][]sent, len(f.hosts))
	g, gctx := errgroup.WithContext(ctx)
	for hi, h := range f.hosts {
		g.Go(func() error {
			for i := range o.alerts {
				id := "lone-" + strconv.Itoa(hi) + "-" + strconv.Itoa(i)
				at := t.clock.Now()
				res, err := h.client.Send(gctx, h.regs, contract.Notification{NotificationID: id, Seq: int64(i), Epoch: "lone",
					Source: contract.SourcePlugin, AgentState: contract.AgentFinished, Title: "Load", Body: id})
				if fail := classify(res, err, 1); fail != "" {
					return fmt.Errorf("send: %s: %w", fail, err)
				}
				all[hi] = append(all[hi], sent{h.tokens[0], id, at.UnixMilli()})
				// Wait out the window (and a margin) so the next alert is alone.
				if err := sleep(gctx, o.window+250*time.Millisecond); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	r, err := t.loneDeliveries(ctx, all, o.window)
	if err != nil {
		return err
	}
	human := fmt.Sprintf("lone alerts=%d delivered=%d missing=%d provider failed=%d latency beyond the window (ms) %s",
		r.Alerts, r.Delivered, r.Missing, r.ProviderFailed, r.Latency)
	if err := t.emit(human, r); err != nil {
		return err
	}
	if r.Missing > 0 {
		return fmt.Errorf("%d alerts never reached the stand-in", r.Missing)
	}
	return nil
}

// loneDeliveries waits, at most ten seconds past the window, until every
// sent alert has an accepted delivery, and measures each from its first.
func (t *target) loneDeliveries(ctx context.Context, all [][]sent, window time.Duration) (loneReport, error) {
	r := loneReport{Mode: "lone", Hosts: len(all)}
	deadline := t.clock.Now().Add(window + 10*time.Second)
	for {
		ds, found, err := t.inbox(ctx)
		if err != nil {
			return r, err
		}
		if !found {
			return r, fmt.Errorf("lone needs the emulator's /_emulator/inbox")
		}
		accepted := map[string]int64{}
		failed := map[string]int{}
		for _, d := range ds {
			k := d.token + "/" + d.id
			if _, ok := accepted[k]; !ok && d.accepted {
				accepted[k] = d.receivedAt
			} else if !d.accepted {
				failed[k]++
			}
		}
		var ms []float64
		r.Alerts, r.Missing, r.ProviderFailed = 0, 0, 0
		for _, hs := range all {
			for _, s := range hs {
				r.Alerts++
				r.ProviderFailed += failed[s.token+"/"+s.id]
				at, ok := accepted[s.token+"/"+s.id]
				if !ok {
					r.Missing++
					continue
				}
				ms = append(ms, float64(at-s.at)-float64(window.Milliseconds()))
			}
		}
		r.Delivered, r.Latency = len(ms), summarize(ms)
		if r.Missing == 0 || !t.clock.Now().Before(deadline) {
			return r, nil
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return r, err
		}
	}
}
