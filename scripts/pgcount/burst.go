package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/store"
)

// -mode burst counts a burst to one phone (issue 29): for each -alerts n it
// runs bursts of n alerts to one registration, admitted together (n sends
// started at once, each with inline delivery, as production runs: no
// coalescing window, ORCA_PUSH_DELIVER_INLINE=1), so that the first
// delivery holds the registration's lease and hands on to the batches it
// held back (the hand-on) while the others' claims find it held. It does
// so twice, with the two counts of -bursts, and the difference of the two
// totals over the difference of the pushes they delivered is what one
// delivered push of a burst of n costs. The bursts are
// contract.QuotaWindow/10 apart, so the host stays under
// contract.AlertQuota (at most 10 bursts of 20 in its window). What a
// request leaves to a task (before the hand-on, each held-back sibling's
// wake-up) is delivered after the burst, as the task's dispatch would, and
// counted with it (taskQueue). Each run checks that every batch it made
// ended sent.
//
// The requests have no budget (delivery.Options.Budget zero): production's
// 1 s (delivery.InlineBudget) is wall time, which a burst of 20 at
// production's speed stays well inside, and under callgrind, tens of times
// slower, it would cut the hand-on short and leave pushes to tasks that
// production delivers inline.

// burstSpacing is the time between two bursts of -mode burst.
const burstSpacing = contract.QuotaWindow / 10

// burstOptions are the flags of -mode burst.
type burstOptions struct {
	alerts []int
	bursts [2]int
}

// flags adds -alerts and -bursts to fs and returns their texts.
func (b *burstOptions) flags(fs *flag.FlagSet) (alerts, bursts *string) {
	a, n := "1,5,10,20", "30,90"
	fs.StringVar(&a, "alerts", a, "-mode burst: the alerts of one burst to one phone, one measurement each (comma-separated, 1..20)")
	fs.StringVar(&n, "bursts", n, "-mode burst: the two numbers of counted bursts whose totals are compared")
	return &a, &n
}

// parse reads -alerts' and -bursts' texts.
func (b *burstOptions) parse(alerts, bursts string) error {
	var err error
	if b.alerts, err = ints(alerts, 1, 20); err != nil {
		return fmt.Errorf("%w: -alerts: %w", errUsage, err)
	}
	n, err := ints(bursts, 1, 1000)
	if err != nil || len(n) != 2 || n[0] >= n[1] {
		return fmt.Errorf("%w: -bursts wants two increasing counts, as 30,90", errUsage)
	}
	b.bursts = [2]int{n[0], n[1]}
	return nil
}

// runBurst prints one measurement per -alerts.
func (c *cluster) runBurst(ctx context.Context, o options, stdout io.Writer) error {
	for _, n := range o.burst.alerts {
		total, splits, err := c.pair(func(i int) (counted, error) {
			return c.count(ctx, o.mode, 1, n, o.burst.bursts[i])
		})
		if err != nil {
			return err
		}
		pushes := (o.burst.bursts[1] - o.burst.bursts[0]) * n
		per := float64(total[1]-total[0]) / float64(pushes)
		fmt.Fprintf(stdout, "pgcount mode=burst alerts=%d instructions/delivered push=%.0f (PostgreSQL's backends, runs of %d and %d bursts)\n",
			n, per, o.burst.bursts[0], o.burst.bursts[1])
		if o.split {
			printSplit(stdout, splits, pushes)
		}
		line, err := json.Marshal(map[string]any{"mode": o.mode, "alerts": n,
			"instructionsPerPush": int64(per), "bursts": o.burst.bursts, "totals": total})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", line)
	}
	return nil
}

// bursts admits b bursts of n alerts to one registration through the empty
// database url, each delivered inline, and checks that every push was sent.
func (c *cluster) bursts(ctx context.Context, url string, n, b int) error {
	s, err := store.Open(ctx, store.Options{DatabaseURL: url, PoolMax: countedPool})
	if err != nil {
		return fmt.Errorf("open the counted cluster: %w", err)
	}
	defer s.Close()
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	q := &taskQueue{}
	a, d, ids, err := admission(ctx, s, clk, true, 1, 0, q)
	if err != nil {
		return err
	}
	for r := range b {
		start := make(chan struct{})
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = send(ctx, a, ids, r*n+i, epoch)
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if err := q.drain(ctx, d); err != nil {
			return err
		}
		clk.Advance(burstSpacing)
	}
	return checkBursts(ctx, url, n*b)
}

// taskQueue is the Cloud Tasks of -mode burst: it keeps what a request
// left to a task (a wake-up, a batch past the budget) for drain, which
// delivers it as the task's dispatch would, counted with the burst.
type taskQueue struct {
	mu  sync.Mutex
	ids []string
}

// Schedule keeps batchID for drain, whatever its due time: the bursts'
// pushes are accepted at once, so none is a retry.
func (q *taskQueue) Schedule(_ context.Context, batchID, _ string, _ time.Time, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids = append(q.ids, batchID)
	return nil
}

// drain delivers the kept batches, and those their deliveries keep, one at
// a time, until none is left.
func (q *taskQueue) drain(ctx context.Context, d *delivery.Deliverer) error {
	for {
		q.mu.Lock()
		ids := q.ids
		q.ids = nil
		q.mu.Unlock()
		if len(ids) == 0 {
			return nil
		}
		for _, id := range ids {
			if err := d.Deliver(ctx, id); err != nil {
				return err
			}
		}
	}
}

// checkBursts fails unless the database url holds want batches, all sent.
func checkBursts(ctx context.Context, url string, want int) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var batches, sent int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE state = $1) FROM push_delivery_batches`,
		string(store.BatchSent)).Scan(&batches, &sent); err != nil {
		return err
	}
	if batches != want || sent != want {
		return fmt.Errorf("-mode burst left %d batches, %d of them sent; want %d, all sent: a push was left to a task",
			batches, sent, want)
	}
	return nil
}
