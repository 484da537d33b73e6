package delivery

import (
	"context"
	"fmt"

	"onorca.dev/push/shared/store"
)

// The hand-on: a registration has one delivery in flight at a time, and
// the batches that fell due meanwhile, held back by their claims, go out
// after it, one after the other, in the same request (store's next.go).

// finish ends the leased batch in state and takes the registration's other
// due batches that this lease held back (store.EndLeasedBatch: on
// PostgreSQL they are read only when a hold-back marked the batch's row;
// store.HeldBack: they are marked when the hand-on reached c); then hands
// on to them (handOn). A lost lease records and hands on nothing: the
// new holder does. A batch that raised its registration's badge and ends in
// any state but sent gives the raise back in the same transaction
// (store.EndLeasedBatch), before the next batch's claim reads the count: no
// provider took the push that counted it. It returns the next batch to
// send, or nil.
func (d *Deliverer) finish(ctx context.Context, c *claimed, state store.BatchState, reason string) (*claimed, error) {
	rec, cancel := recording(ctx)
	defer cancel()
	now := d.clock.Now().UnixMilli()
	held := store.ReadHeldBack
	if c.handedOn {
		held = store.MarkHeldBack
	}
	ended, next, err := d.store.EndLeasedBatch(rec, c.batch.ID, c.batch.Host, c.batch.RegistrationID, c.token, state, reason, now, held)
	if err != nil {
		return nil, fmt.Errorf("finish: %w", err)
	}
	if !ended {
		return nil, nil
	}
	return d.handOn(ctx, c, next, now)
}

// handOn claims the first of next, the registration's batches that fell due
// while c held the lease (oldest due first), for the caller to deliver in
// the same request, as long as ctx (the request's budget) lasts. Once it
// has run out, the first goes to one task instead (wake), whose delivery
// hands on to the others: the held-back batches are never woken one task
// each. A batch the claim finds finished or expired gives way to the next;
// one another delivery holds ends the hand-on, since that delivery hands
// on when it ends. Should this process die first, the sweep finds them lost
// (Sweeper): that is each held-back batch's one fallback.
func (d *Deliverer) handOn(ctx context.Context, c *claimed, next []string, now int64) (*claimed, error) {
	for i, id := range next {
		if ctx.Err() != nil {
			d.wakeAfter(ctx, c.batch.RegistrationID, next[i:], now, c.token)
			return nil, nil
		}
		n, held, err := d.claim(ctx, id)
		if n != nil {
			n.handedOn = true
		}
		if err != nil || n != nil || held {
			return n, err
		}
	}
	return nil, nil
}

// wakeAfter is wake once ctx has ended: the task is made all the same.
func (d *Deliverer) wakeAfter(ctx context.Context, registrationID string, ids []string, now int64, token string) {
	rec, cancel := recording(ctx)
	defer cancel()
	d.wake(rec, registrationID, ids, now, token)
}

// wake hands the first of ids, batches a lease (token) held back, to the
// scheduler, due at now: its delivery hands on to the rest. The lease token
// keys the task, so a wake-up never merges with the batch's own task for the
// same millisecond, which has run already.
func (d *Deliverer) wake(ctx context.Context, registrationID string, ids []string, now int64, token string) {
	if len(ids) > 0 {
		d.schedule(ctx, ids[0], registrationID, now, token)
	}
}
