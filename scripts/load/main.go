// Command load drives a running emulator (real clock) with many hosts and
// reports the lone-alert latency: from just before POST /v1/send to the
// stand-in receiving the provider request, minus the coalescing window.
//
//	go run ./scripts/emulator &          # real clock
//	go run ./scripts/load -hosts 16 -alerts 10
//
// Each host registers one iPhone and sends alerts one at a time, each after
// the previous one's window closed, so every alert is delivered alone. The
// run is bounded: hosts × alerts sends, then one read of the inbox.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// sent is when one alert left, keyed by its device token and id.
type sent struct {
	token, id string
	at        int64
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	gateway := fs.String("gateway", "http://127.0.0.1:8080", "emulator origin")
	hosts := fs.Int("hosts", 16, "concurrent hosts")
	alerts := fs.Int("alerts", 10, "alerts per host")
	window := fs.Duration("window", contract.DefaultCoalesce, "the emulator's coalescing window (ORCA_PUSH_COALESCE_MS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *hosts < 1 || *hosts > 1000 || *alerts < 1 || *alerts > 1000 {
		return fmt.Errorf("hosts and alerts must be in 1..1000")
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var all []sent
	g, gctx := errgroup.WithContext(ctx)
	for h := range *hosts {
		g.Go(func() error {
			kp, err := hostclient.GenerateKeypair(rand.Reader)
			if err != nil {
				return err
			}
			// Each host has a client IP of its own, as real desktops do, so
			// the per-IP sign-in bucket meters hosts, not the tool.
			ip := &http.Client{Timeout: hc.Timeout, Transport: forwardedFor{fmt.Sprintf("198.18.%d.%d", h/256, h%256)}}
			c, err := hostclient.New(hostclient.Options{BaseURL: *gateway, Keypair: kp, HTTPClient: ip, Clock: clock.Real{}})
			if err != nil {
				return err
			}
			token := fmt.Sprintf("%064x", h+1)
			reg, err := c.Register(gctx, hostclient.RegisterParams{DeviceID: "phone", Platform: contract.PlatformIOS,
				Token: token, APNSEnvironment: contract.APNSSandbox})
			if err != nil {
				return err
			}
			for i := range *alerts {
				id := fmt.Sprintf("load-%d-%d", h, i)
				n := contract.Notification{NotificationID: id, Seq: int64(i), Epoch: "load", Source: contract.SourcePlugin,
					AgentState: contract.AgentFinished, Title: "Load", Body: id}
				at := time.Now().UnixMilli()
				res, err := c.Send(gctx, []string{reg}, n)
				if err != nil {
					return err
				}
				if res[0].Status != contract.StatusQueued {
					return fmt.Errorf("send: %s", res[0].Status)
				}
				mu.Lock()
				all = append(all, sent{token, id, at})
				mu.Unlock()
				// Wait out the window (and a margin) so the next alert is alone.
				time.Sleep(*window + 300*time.Millisecond)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	time.Sleep(time.Second)
	received, err := inbox(ctx, hc, *gateway)
	if err != nil {
		return err
	}
	var lat []float64
	missing := 0
	for _, s := range all {
		r, ok := received[s.token+"/"+s.id]
		if !ok {
			missing++
			continue
		}
		lat = append(lat, float64(r-s.at)-float64(window.Milliseconds()))
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Fprintf(stdout, "alerts=%d delivered=%d missing=%d latency beyond the window (ms): p50=%.0f p90=%.0f p99=%.0f max=%.0f\n",
		len(all), len(lat), missing, q(0.5), q(0.9), q(0.99), q(1))
	if missing > 0 {
		return fmt.Errorf("%d alerts never reached the stand-in", missing)
	}
	return nil
}

// inbox returns when the stand-in received each alert, keyed by token and
// notification id.
func inbox(ctx context.Context, hc *http.Client, gateway string) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", gateway+"/_emulator/inbox", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var in struct {
		Deliveries []struct {
			Path       string `json:"path"`
			ReceivedAt int64  `json:"receivedAt"`
			Body       struct {
				Orca struct {
					NotificationID string `json:"notificationId"`
				} `json:"orca"`
			} `json:"body"`
		} `json:"deliveries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&in); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(in.Deliveries))
	for _, d := range in.Deliveries {
		token := strings.TrimPrefix(d.Path, "/3/device/")
		out[token+"/"+d.Body.Orca.NotificationID] = d.ReceivedAt
	}
	return out, nil
}

// forwardedFor sends each request with X-Forwarded-For set to its client IP.
type forwardedFor struct{ ip string }

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.ip)
	return http.DefaultTransport.RoundTrip(r)
}
