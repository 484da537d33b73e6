package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

// target is where a send goes: --to IDs, or every registration.
type target struct {
	to  *string
	all *bool
}

func targetFlags(fs *flag.FlagSet) target {
	return target{
		to:  fs.String("to", "", "comma-separated registration `IDs` (default: every registration of the host)"),
		all: fs.Bool("all", false, "send to every registration of the host (the default)"),
	}
}

// check refuses --to with --all.
func (t target) check() error {
	if *t.to != "" && *t.all {
		return usagef("give --to or --all, not both")
	}
	return nil
}

// ids returns the registration ids to send to.
func (t target) ids(ctx context.Context, h *host) ([]string, error) {
	if *t.to != "" {
		return strings.Split(*t.to, ","), nil
	}
	var ids []string
	err := h.do(ctx, func() error {
		list, err := h.client.Devices(ctx)
		for _, d := range list {
			ids = append(ids, d.RegistrationID)
		}
		return err
	})
	if err == nil && len(ids) == 0 {
		err = errors.New("the host has no registration: run 'go run ./scripts/host register ios' first")
	}
	return ids, err
}

// notQueued is the error of a send some registration did not accept: the
// gateway answered 200 with another status than queued for it.
type notQueued struct{ results []contract.SendResult }

func (e notQueued) Error() string {
	var parts []string
	for _, r := range e.results {
		if r.Status != contract.StatusQueued {
			parts = append(parts, r.RegistrationID+" "+string(r.Status))
		}
	}
	return "not queued: " + strings.Join(parts, ", ")
}

func sendFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	title := fs.String("title", "", "the alert's title (required)")
	body := fs.String("body", "", "the alert's body")
	silent := fs.Bool("silent", false, "no sound")
	id := fs.String("id", "", "notification `id`, to dismiss it later (default: a new one)")
	seq := fs.Int64("seq", -1, "notification sequence number; -1 takes the key's next one, so each send is a new event")
	to := targetFlags(fs)
	wait := waitFlags(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if *title == "" {
			return usagef("send needs --title")
		}
		if err := to.check(); err != nil {
			return err
		}
		if err := wait.check(); err != nil {
			return err
		}
		n := contract.Notification{NotificationID: *id, Source: contract.SourceAgentTaskComplete,
			AgentState: contract.AgentFinished, Title: *title, Body: *body}
		if n.NotificationID == "" {
			n.NotificationID = "cli-" + randomHex(4)
		}
		if *silent {
			n.Sound = new(bool)
		}
		return send(ctx, c, to, n, *seq, wait)
	}
}

func dismissFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	id := fs.String("id", "", "the `id` of the alert to dismiss (required)")
	seq := fs.Int64("seq", -1, "notification sequence number; -1 takes the key's next one, after the alert's")
	to := targetFlags(fs)
	wait := waitFlags(fs)
	return func(ctx context.Context, c *cli, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if *id == "" {
			return usagef("dismiss needs --id")
		}
		if err := to.check(); err != nil {
			return err
		}
		if err := wait.check(); err != nil {
			return err
		}
		// The contract wants a title on every notification; a dismissal's
		// is never shown.
		n := contract.Notification{NotificationID: *id, Kind: contract.KindDismiss,
			Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished, Title: "Dismissed"}
		return send(ctx, c, to, n, *seq, wait)
	}
}

// send sends n, numbered with the key's epoch and next sequence (or seq), to
// the target, and prints each registration's status; with --wait, then
// what became of it on each phone.
func send(ctx context.Context, c *cli, to target, n contract.Notification, seq int64, w waitOptions) error {
	h, err := c.connect()
	if err != nil {
		return err
	}
	ids, err := to.ids(ctx, h)
	if err != nil {
		return err
	}
	s, err := nextSequence(c.keyPath, seq)
	if err != nil {
		return err
	}
	n.Epoch, n.Seq = s.Epoch, s.Seq
	var results []contract.SendResult
	if err := h.do(ctx, func() (err error) { results, err = h.client.Send(ctx, ids, n); return err }); err != nil {
		return err
	}
	var text strings.Builder
	fmt.Fprintf(&text, "sent %s %s (epoch %s, seq %d)\n", n.EffectiveKind(), n.NotificationID, n.Epoch, n.Seq)
	for _, r := range results {
		fmt.Fprintf(&text, "  %s  %s\n", r.RegistrationID, r.Status)
	}
	c.print(struct {
		Kind              contract.Kind         `json:"kind"`
		NotificationID    string                `json:"notificationId"`
		NotificationEpoch string                `json:"notificationEpoch"`
		NotificationSeq   int64                 `json:"notificationSeq"`
		Results           []contract.SendResult `json:"results"`
	}{n.EffectiveKind(), n.NotificationID, n.Epoch, n.Seq, nonNil(results)}, text.String())
	for _, r := range results {
		if r.Status != contract.StatusQueued {
			return notQueued{results}
		}
	}
	if *w.wait {
		return waitForEnd(ctx, c, h, hostclient.EventOf(n), w)
	}
	return nil
}
