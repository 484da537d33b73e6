package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// delivery is one provider request the emulator's stand-ins received.
type delivery struct {
	// accepted says the stand-in answered 200; anything else (an injected
	// 410, 429 or 5xx, or no answer) is a failed attempt.
	accepted   bool
	token, id  string
	alerts     int // coalescedCount: the alerts the request carried
	receivedAt int64
}

// inbox returns what the stand-ins received (GET /_emulator/inbox), in
// arrival order. found is false when the gateway has no inbox, as a
// deployed one has not.
func (t *target) inbox(ctx context.Context) (ds []delivery, found bool, err error) {
	var in struct {
		Deliveries []struct {
			Status     int    `json:"status"`
			ReceivedAt int64  `json:"receivedAt"`
			Path       string `json:"path"`
			Body       struct {
				// APNs
				Orca struct {
					NotificationID string `json:"notificationId"`
					CoalescedCount int    `json:"coalescedCount"`
				} `json:"orca"`
				// FCM
				Message struct {
					Token string `json:"token"`
					Data  struct {
						NotificationID string `json:"notificationId"`
						CoalescedCount string `json:"coalescedCount"`
					} `json:"data"`
				} `json:"message"`
			} `json:"body"`
		} `json:"deliveries"`
	}
	if found, err := t.getJSON(ctx, "/_emulator/inbox", &in); err != nil || !found {
		return nil, false, err
	}
	ds = make([]delivery, len(in.Deliveries))
	for i, d := range in.Deliveries {
		b := d.Body
		ds[i] = delivery{accepted: d.Status == http.StatusOK, receivedAt: d.ReceivedAt,
			token: strings.TrimPrefix(d.Path, "/3/device/"), id: b.Orca.NotificationID, alerts: b.Orca.CoalescedCount}
		if b.Message.Token != "" {
			ds[i].token, ds[i].id = b.Message.Token, b.Message.Data.NotificationID
			ds[i].alerts, _ = strconv.Atoi(b.Message.Data.CoalescedCount)
		}
	}
	return ds, true, nil
}

// deliveriesReport counts what reached the stand-ins for a run's phones.
type deliveriesReport struct {
	Mode string `json:"mode"`
	// Expected is the registrations answered queued.
	Expected int64 `json:"expected"`
	// Delivered is the alerts in the requests the stand-ins accepted.
	Delivered int64 `json:"delivered"`
	// Accepted and Failed count provider requests by the stand-in's answer.
	Accepted int `json:"providerAccepted"`
	Failed   int `json:"providerFailed"`
}

// deliveryIdle is how long, beyond the coalescing window, the tool waits
// for the next delivery before it counts the missing alerts as lost.
const deliveryIdle = 15 * time.Second

// inboxMark is where a run's deliveries begin in the inbox; nil when they
// are not counted.
type inboxMark struct{ from int }

// withFleet provisions the -hosts fleet and runs measure on it, between
// marking the inbox and waiting for the deliveries when -deliveries is set.
func (t *target) withFleet(ctx context.Context, o options, measure func(*fleet) error) error {
	d, err := t.startDeliveries(ctx, o.deliveries)
	if err != nil {
		return err
	}
	f, err := t.provision(ctx, o.hosts, o.phones)
	if err != nil {
		return err
	}
	if err := measure(f); err != nil {
		return err
	}
	return t.finishDeliveries(ctx, d, f, o.window)
}

// startDeliveries marks the inbox before a run, when want is set and the
// gateway has an inbox.
func (t *target) startDeliveries(ctx context.Context, want bool) (*inboxMark, error) {
	if !want {
		return nil, nil
	}
	ds, found, err := t.inbox(ctx)
	if err != nil || !found {
		if !found && err == nil {
			fmt.Fprintln(t.stdout, "deliveries: the gateway has no /_emulator/inbox; not counted")
		}
		return nil, err
	}
	return &inboxMark{from: len(ds)}, nil
}

// finishDeliveries waits until the stand-ins have received every alert the
// run's phones were answered queued for, or until none more arrived for the
// coalescing window and deliveryIdle, then reports them. A loaded gateway
// may deliver well after the last send: waiting as long as deliveries come
// tells a backlog from a loss. Polling is the way across a process
// boundary.
func (t *target) finishDeliveries(ctx context.Context, m *inboxMark, f *fleet, window time.Duration) error {
	if m == nil {
		return nil
	}
	ours := map[string]bool{}
	for _, h := range f.hosts {
		for _, tok := range h.tokens {
			ours[tok] = true
		}
	}
	r := deliveriesReport{Mode: "deliveries", Expected: f.queued.Load()}
	idle := t.clock.Now()
	var seen int64 = -1
	for {
		ds, _, err := t.inbox(ctx)
		if err != nil {
			return err
		}
		r.Delivered, r.Accepted, r.Failed = 0, 0, 0
		for _, d := range ds[min(m.from, len(ds)):] {
			switch {
			case !ours[d.token]:
			case d.accepted:
				r.Accepted++
				r.Delivered += int64(d.alerts)
			default:
				r.Failed++
			}
		}
		now := t.clock.Now()
		if r.Delivered != seen {
			seen, idle = r.Delivered, now
		}
		if r.Delivered >= r.Expected || now.Sub(idle) > window+deliveryIdle {
			break
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	human := fmt.Sprintf("deliveries expected=%d delivered=%d provider accepted=%d failed=%d",
		r.Expected, r.Delivered, r.Accepted, r.Failed)
	if err := t.emit(human, r); err != nil {
		return err
	}
	if r.Delivered < r.Expected {
		return fmt.Errorf("%d of %d queued alerts never reached the stand-ins", r.Expected-r.Delivered, r.Expected)
	}
	return nil
}
