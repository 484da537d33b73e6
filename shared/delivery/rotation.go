package delivery

import (
	"context"
	"fmt"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
)

// A payload-key rotation (infra/README.md, "Payload keys") runs mixed rings
// while it rolls out: Cloud Run reads ORCA_PUSH_PAYLOAD_KEYS when an
// instance starts, so instances of the old revision and of the new one
// claim the same batches. A claim that meets a member sealed under a key id
// its ring lacks therefore does not end the batch: another instance may
// hold that key, or will once the rollout ends. It leaves the batch (leave)
// to be claimed again later, by any instance, until its deadline. Only a
// member that fails to authenticate under a key the ring holds (changed
// bytes, another row's members, another key under the same id), or the
// deadline, ends the batch expired with reason payload_key_unknown.

// leave gives batch c back, unsent and with no attempt counted, due again
// after leaveDelay, and hands on to what its lease held back. When that
// would be at or past its deadline it ends it instead, as unopenable. It
// returns the next batch to send, or nil.
func (d *Deliverer) leave(ctx context.Context, c *claimed) (*claimed, error) {
	now := d.clock.Now().UnixMilli()
	at := now + leaveDelay(now, c.batch.CreatedAt).Milliseconds()
	if at >= c.batch.ExpiresAt {
		return d.unopenable(ctx, c)
	}
	d.counters.Inc(obs.PayloadKeyNotHeld)
	released, next, err := d.store.ReleaseBatch(ctx, c.batch.ID, c.batch.RegistrationID, c.token, at, now)
	if err != nil {
		return nil, fmt.Errorf("leave: %w", err)
	}
	if released {
		d.schedule(ctx, c.batch.ID, c.batch.RegistrationID, at, "")
	}
	return d.handOn(ctx, c, next, now)
}

// leaveDelay is how long a batch left for another instance waits before it
// is claimed again: half its age, between contract.MinRetryDelay and
// contract.MaxBackoff. The claims come quickly while another instance of the
// rollout is likely to take it, and grow apart as it ages, so a batch no
// instance can open costs about a dozen claims over its life, not one a
// second, whatever the number of such batches.
func leaveDelay(now, createdAt int64) time.Duration {
	age := time.Duration(now-createdAt) * time.Millisecond
	return min(contract.MaxBackoff, max(contract.MinRetryDelay, age/2))
}

// unopenable ends batch c expired with reason payload_key_unknown, without
// a provider call: it can never be delivered. It returns the next batch to
// send, or nil.
func (d *Deliverer) unopenable(ctx context.Context, c *claimed) (*claimed, error) {
	d.counters.Inc(obs.DeliveryExpired)
	d.counters.Inc(obs.PayloadUnopenable)
	return d.finish(ctx, c, store.BatchExpired, payloadKeyUnknown)
}
