package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// delivery is an entry of GET /_emulator/inbox, with the fields a line
// shows; --json prints the entry as the emulator wrote it.
type delivery struct {
	Provider   string            `json:"provider"`
	Status     int               `json:"status"`
	Reason     string            `json:"reason"`
	ReceivedAt int64             `json:"receivedAt"`
	Path       string            `json:"path"`
	Headers    map[string]string `json:"headers"`
	Body       struct {
		APS *struct {
			Alert *struct{ Title, Body string } `json:"alert"`
			Sound string                        `json:"sound"`
		} `json:"aps"`
		Orca    map[string]any `json:"orca"`
		Message *struct {
			Token        string            `json:"token"`
			Data         map[string]string `json:"data"`
			Notification *struct{ Title, Body string }
			Android      struct {
				Notification struct {
					ChannelID string `json:"channel_id"`
				} `json:"notification"`
			} `json:"android"`
		} `json:"message"`
	} `json:"body"`
}

func watchFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	count := fs.Int("count", 0, "stop after this many lines (default: follow until interrupted)")
	interval := fs.Duration("interval", 500*time.Millisecond, "how often to read the inbox")
	return func(ctx context.Context, c *cli, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if *interval <= 0 {
			return usagef("--interval must be positive")
		}
		return watch(ctx, c, *count, *interval)
	}
}

// watch prints every request the emulator's stand-ins received so far, then
// each new one, reading GET /_emulator/inbox every interval (real time: it
// paces the polling of another process, it decides nothing). A cleared inbox
// starts over. It returns after count lines, or nil when ctx ends.
func watch(ctx context.Context, c *cli, count int, interval time.Duration) error {
	hc := &http.Client{Timeout: 30 * time.Second}
	url := strings.TrimRight(c.gateway, "/") + "/_emulator/inbox"
	seen, printed := 0, 0
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		var inbox struct {
			Deliveries []json.RawMessage `json:"deliveries"`
		}
		if err := getJSON(ctx, hc, url, &inbox); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch needs the emulator's inbox: %w", err)
		}
		if len(inbox.Deliveries) < seen {
			seen = 0 // cleared
		}
		for _, raw := range inbox.Deliveries[seen:] {
			if c.json {
				fmt.Fprintf(c.stdout, "%s\n", raw)
			} else {
				var d delivery
				json.Unmarshal(raw, &d)
				fmt.Fprintln(c.stdout, d.line())
			}
			seen++
			if printed++; count > 0 && printed == count {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// line is one delivery for a person: when, which provider answered what,
// to which token, and what the phone shows.
func (d delivery) line() string {
	status := fmt.Sprint(d.Status)
	if d.Reason != "" {
		status += " " + d.Reason
	}
	token, kind, title, body := "", "alert", "", ""
	if d.Body.APS != nil {
		token = d.Path[strings.LastIndex(d.Path, "/")+1:]
		if d.Body.APS.Alert != nil {
			title, body = d.Body.APS.Alert.Title, d.Body.APS.Alert.Body
			if d.Body.APS.Sound == "" {
				kind = "silent alert"
			}
		}
		if d.Body.Orca["kind"] == "dismiss" {
			kind = "dismissal of " + fmt.Sprint(d.Body.Orca["notificationId"])
		}
	} else if m := d.Body.Message; m != nil {
		token = m.Token
		if m.Notification != nil {
			title, body = m.Notification.Title, m.Notification.Body
			if strings.HasSuffix(m.Android.Notification.ChannelID, "-silent") {
				kind = "silent alert"
			}
		} else { // a data-only message: the app draws the banner
			title, body = m.Data["title"], m.Data["message"]
			if m.Data["sound"] == "" && title != "" {
				kind = "silent alert"
			}
		}
		if m.Data["kind"] == "dismiss" {
			kind = "dismissal of " + m.Data["notificationId"]
		}
	}
	if len(token) > 8 {
		token = token[:8] + "…"
	}
	text := ""
	if title != "" {
		text = fmt.Sprintf(" %q", title)
		if body != "" {
			text += fmt.Sprintf(" — %q", body)
		}
	}
	at := time.UnixMilli(d.ReceivedAt).UTC().Format("15:04:05.000")
	return fmt.Sprintf("%s %s %s to %s: %s%s", at, d.Provider, status, token, kind, text)
}
