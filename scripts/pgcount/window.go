package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/store"
)

// -mode window counts a send that joins an open batch (issue 33): for each
// -members k and -regs r it runs -rounds rounds in which the host's alerts
// to r registrations open a batch for each and join it until it holds k
// members, then runs the same rounds with k+1 alerts each; the difference
// of the two totals over the rounds is what the (k+1)th alert costs, the
// send that joins r batches of k members. The coalescing window is 60 s
// (every send of a round joins), and the rounds are contract.QuotaWindow/8
// apart, so that each opens new batches and the host stays under
// contract.AlertQuota (at most 8 rounds of 32 in its window). Both runs
// begin with the same warm-up rounds of two sends (warmRounds), so that
// neither counts PostgreSQL's first plans of the join's statements. Each
// run checks that every batch it left holds the alerts of its round.

// coalesceWindow is the window of -mode window, the one issue 33 measured.
const coalesceWindow = 60 * time.Second

// shortEpoch is the notificationEpoch of -mode window's alerts: with a UUID
// a summary of 32 of them passes contract.MaxProviderPayload, and a batch
// of 31 members could not be joined.
const shortEpoch = "e1"

// windowOptions are the flags of -mode window.
type windowOptions struct {
	members []int
	rounds  int
}

// flags adds -members and -rounds to fs and returns -members' text.
func (w *windowOptions) flags(fs *flag.FlagSet) *string {
	members := "1,16,31"
	fs.StringVar(&members, "members", members, "-mode window: the members already in the batch a counted send joins, one measurement each (comma-separated, 1..31)")
	fs.IntVar(&w.rounds, "rounds", 30, "-mode window: the batches each registration fills per run")
	return &members
}

// runWindow prints one measurement per -regs and -members.
func (c *cluster) runWindow(ctx context.Context, o options, stdout io.Writer) error {
	for _, regs := range o.regs {
		for _, k := range o.window.members {
			total, splits, err := c.pair(func(i int) (counted, error) {
				return c.count(ctx, o.mode, regs, k+i, o.window.rounds)
			})
			if err != nil {
				return err
			}
			per := float64(total[1]-total[0]) / float64(o.window.rounds)
			fmt.Fprintf(stdout, "pgcount mode=window regs=%d members=%d instructions/joining send=%.0f (PostgreSQL's backends, %d rounds of %d and %d sends)\n",
				regs, k, per, o.window.rounds, k, k+1)
			fields := map[string]any{"mode": o.mode, "regs": regs, "members": k,
				"instructionsPerSend": int64(per), "rounds": o.window.rounds, "totals": total}
			if o.split {
				// The difference of the two runs is one joining send a round.
				fields["statementsPerSend"] = int64(printSplit(stdout, splits, o.window.rounds))
			}
			line, err := json.Marshal(fields)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", line)
		}
	}
	return nil
}

// warmRounds is the number of rounds of two sends (a batch opened and
// joined) that begin each run of -mode window. PostgreSQL plans a prepared
// statement afresh at each of its first five executions on a connection
// (plan_cache_mode auto) and only then may keep a generic plan: a run whose
// join statement ran fewer times counted those plans (about 100,000
// instructions each for the join's UPDATE), so that the figure of k = 1,
// where the shorter run joins only in its warm-up, moved by 5 % from run
// to run with the pool's choice of connection. After six rounds on one
// connection both runs count what a long-lived connection does.
const warmRounds = 6

// rounds admits n rounds of m sends to regs registrations through the
// empty database url, each round filling a new batch per registration, and
// checks that it did.
func (c *cluster) rounds(ctx context.Context, url string, regs, m, n int) error {
	// The sends run one after the other, so each of the store's pools opens
	// one connection and every statement's plans are the same
	// connection's from run to run (see warmRounds).
	s, err := store.Open(ctx, store.Options{DatabaseURL: url, PoolMax: countedPool})
	if err != nil {
		return fmt.Errorf("open the counted cluster: %w", err)
	}
	defer s.Close()
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	a, _, ids, err := admission(ctx, s, clk, false, regs, coalesceWindow, delivery.NopScheduler{})
	if err != nil {
		return err
	}
	sent := 0
	for r := range warmRounds + n {
		size := m
		if r < warmRounds {
			size = 2 // the warm-up
		}
		for range size {
			if err := send(ctx, a, ids, sent, shortEpoch); err != nil {
				return err
			}
			sent++
			clk.Advance(time.Millisecond)
		}
		clk.Advance(contract.QuotaWindow / 8)
	}
	return checkRounds(ctx, url, regs, m, n)
}

// checkRounds fails unless the database url holds, for each of regs
// registrations, the warm-up's batches of 2 members and n batches of m.
func checkRounds(ctx context.Context, url string, regs, m, n int) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var batches, full int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE members = $1) FROM push_delivery_batches`, m).
		Scan(&batches, &full); err != nil {
		return err
	}
	want := regs * n
	if m == 2 {
		want += regs * warmRounds
	}
	if batches != regs*(warmRounds+n) || full != want {
		return fmt.Errorf("-mode window left %d batches, %d of them of %d members; want %d and %d: the sends did not all join",
			batches, full, m, regs*(warmRounds+n), want)
	}
	return nil
}
