package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"onorca.dev/push/shared/contract"
)

func receiptsFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	epoch := fs.String("epoch", "", "the events' notification epoch (default: the key's)")
	dismiss := fs.Bool("dismiss", false, "the events are dismissals (default alerts)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) == 0 {
			return usagef("receipts takes one or more sequence numbers")
		}
		kind := contract.KindAlert
		if *dismiss {
			kind = contract.KindDismiss
		}
		e := *epoch
		if e == "" {
			var err error
			if e, err = keyEpoch(c.keyPath); err != nil {
				return err
			}
		}
		events := make([]contract.EventRef, len(args))
		for i, a := range args {
			seq, err := strconv.ParseInt(a, 10, 64)
			if err != nil || seq < 0 {
				return usagef("%q is not a sequence number", a)
			}
			events[i] = contract.EventRef{Kind: kind, Epoch: e, Seq: seq}
		}
		h, err := c.connect()
		if err != nil {
			return err
		}
		var got []contract.Receipt
		if err := h.do(ctx, func() (err error) { got, err = h.client.Receipts(ctx, events); return err }); err != nil {
			return err
		}
		c.print(contract.ReceiptsResponse{Receipts: nonNil(got)}, receiptsText(got))
		return nil
	}
}

// keyEpoch is the notification epoch of the key at keyPath's sends.
func keyEpoch(keyPath string) (string, error) {
	var s sequence
	if err := readJSON(sequencePath(keyPath), &s); err != nil {
		return "", err
	}
	if s.Epoch == "" {
		return "", errors.New("this key has sent nothing yet: give --epoch")
	}
	return s.Epoch, nil
}

// receiptsText is receipts for a person: each event, then a line for each
// recipient.
func receiptsText(receipts []contract.Receipt) string {
	var b strings.Builder
	for _, r := range receipts {
		fmt.Fprintf(&b, "%s seq %d (epoch %s): ", r.Kind, r.NotificationSeq, r.NotificationEpoch)
		if !r.Known {
			b.WriteString("unknown (not this host's, or older than a day)\n")
			continue
		}
		fmt.Fprintf(&b, "%d recipient(s)\n", len(r.Recipients))
		tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
		for _, p := range r.Recipients {
			fmt.Fprintf(tw, "  %s\t%s\t%s", p.RegistrationID, p.Status,
				time.UnixMilli(p.At).UTC().Format("2006-01-02T15:04:05.000Z"))
			if p.Reason != "" {
				fmt.Fprintf(tw, "\t%s", p.Reason)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	return b.String()
}

// waitOptions are send's --wait flags.
type waitOptions struct {
	wait              *bool
	timeout, interval *time.Duration
}

func waitFlags(fs *flag.FlagSet) waitOptions {
	return waitOptions{
		wait: fs.Bool("wait", false, "wait until every phone's push has ended (receipts), exit 1 unless each was sent"),
		timeout: fs.Duration("timeout", time.Minute,
			"with --wait, how long to wait (the emulator's manual clock never moves on its own)"),
		interval: fs.Duration("interval", 500*time.Millisecond, "with --wait, how often to ask"),
	}
}

// check refuses a wait that could not end.
func (w waitOptions) check() error {
	if *w.wait && (*w.timeout <= 0 || *w.interval <= 0) {
		return usagef("--timeout and --interval must be positive")
	}
	return nil
}

// notSent is the error of a waited send that some phone did not get.
type notSent struct{ recipients []contract.RecipientReceipt }

func (e notSent) Error() string {
	var parts []string
	for _, r := range e.recipients {
		if r.Status != contract.ReceiptSent {
			parts = append(parts, r.RegistrationID+" "+string(r.Status))
		}
	}
	return "not sent: " + strings.Join(parts, ", ")
}

// waitForEnd asks for event's receipt every interval until no recipient is
// queued or retrying, or the timeout passes, and prints it. It returns
// notSent when any recipient ended other than sent, and an error naming the
// ones still on the way at the timeout. The waits are real time: they pace
// the questions to another process, and decide nothing in the gateway.
func waitForEnd(ctx context.Context, c *cli, h *host, event contract.EventRef, w waitOptions) error {
	ctx, cancel := context.WithTimeout(ctx, *w.timeout)
	defer cancel()
	tick := time.NewTicker(*w.interval)
	defer tick.Stop()
	var last []contract.Receipt
	for {
		var got []contract.Receipt
		err := h.do(ctx, func() (err error) {
			got, err = h.client.Receipts(ctx, []contract.EventRef{event})
			return err
		})
		switch {
		case err != nil && ctx.Err() != nil && last != nil:
			// The time ran out during a question: the last answer stands.
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("no answer within %v: %w", *w.timeout, err)
		case err != nil:
			return err
		default:
			last = got
		}
		if r := last[0]; ended(r) {
			c.print(r, receiptsText(last))
			for _, p := range r.Recipients {
				if p.Status != contract.ReceiptSent {
					return notSent{r.Recipients}
				}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			c.print(last[0], receiptsText(last))
			return fmt.Errorf("still on the way after %v (see above)", *w.timeout)
		case <-tick.C:
		}
	}
}

// ended reports whether r is known and none of its recipients is on the way.
func ended(r contract.Receipt) bool {
	if !r.Known {
		return false
	}
	for _, p := range r.Recipients {
		if !p.Status.Final() {
			return false
		}
	}
	return true
}
