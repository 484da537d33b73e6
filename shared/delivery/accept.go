package delivery

import (
	"context"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
)

// outcome is what one registration's transaction decided. The transaction
// may run more than once, so it fills a fresh outcome each time and the
// caller applies it only after commit.
type outcome struct {
	status contract.Status
	// due lists the batches to hand to the scheduler.
	due []due
	// deadline is the event's deadline when the event was recorded or
	// matched (known); fence the dismissal fence when one was raised.
	known    bool
	deadline int64
	fenced   bool
	fence    int64
}

// admit runs one registration's transaction and applies its outcome to ev.
func (a *Admission) admit(ctx context.Context, ev *event, registrationID string, now int64) (contract.Status, []due, error) {
	var out outcome
	err := a.store.HostTx(ctx, ev.host, func(tx *store.Tx) error {
		out = outcome{}
		return a.accept(ctx, tx, ev, registrationID, now, &out)
	})
	if err != nil {
		return "", nil, err
	}
	if out.known {
		ev.known, ev.deadline = true, out.deadline
	}
	if out.fenced {
		ev.fenced, ev.fence = true, out.fence
	}
	return out.status, out.due, nil
}

// accept is reference-behaviour §4.2 for one registration, inside its
// per-host transaction. Its statements, in the common case of a new alert:
// record the event (with the ownership and quota checks) and the recipient
// (with the event, ownership and fence checks, reading the open batch) in
// one round trip, then open or join a batch, which travels with COMMIT.
// Only when no recipient was recorded does it read why.
func (a *Admission) accept(ctx context.Context, tx *store.Tx, ev *event, reg string, now int64, out *outcome) error {
	// A passed expiresAt makes any deadline pass, new or stored (the
	// stored one is at most the same expiresAt, or the content differs).
	if ev.deadline > now {
		if !ev.known {
			err := tx.InsertEvent(ctx, store.NewEvent{
				ID: ev.id, Host: ev.host, Kind: ev.kind, Fingerprint: ev.fingerprint, RegistrationID: reg,
				Deadline: ev.deadline, QuotaSince: now - contract.QuotaWindow.Milliseconds(), Quota: quota(ev.kind),
			}, now)
			if err != nil {
				return err
			}
		}
		added, pending, err := tx.AddRecipient(ctx, store.Recipient{
			EventID: ev.id, RegistrationID: reg, Host: ev.host, Fingerprint: ev.fingerprint, Kind: ev.kind,
			Fence: ev.fenceOf(),
		}, now)
		if err != nil {
			return err
		}
		if added {
			out.status, out.known, out.deadline = contract.StatusQueued, true, pending.Deadline
			if ev.kind == contract.KindDismiss {
				return a.dismiss(ctx, tx, ev, reg, pending.Cancellable, pending.Deadline, now, out)
			}
			return a.coalesceAlert(ctx, tx, ev, reg, pending.Open, pending.Deadline, now, out)
		}
	}
	// Nothing recorded: find out why.
	c, err := tx.CheckEvent(ctx, ev.host, reg, ev.id)
	if err != nil {
		return err
	}
	out.status = refusal(c, ev, now)
	if out.status == contract.StatusQueued {
		out.known, out.deadline = true, c.ExpiresAt
	}
	return nil
}

// refusal is the status of a registration for which no recipient was
// recorded, from what [store.Tx.CheckEvent] found: the registration's state
// first, then the event's. A live registration with the event as sent is
// queued: the pair was recorded before, or a dismissal fence drops the
// alert (decisions table: ≤ is dropped at acceptance, answered queued).
func refusal(c store.EventCheck, ev *event, now int64) contract.Status {
	switch {
	case c.Device != store.DeviceAlive:
		return deviceStatus(c.Device)
	case ev.deadline <= now:
		return contract.StatusError
	case !c.Found:
		return contract.StatusRateLimited
	case c.Fingerprint != ev.fingerprint || c.ExpiresAt <= now:
		// Same identity with other content, or a duplicate after the
		// event's life.
		return contract.StatusError
	}
	return contract.StatusQueued
}

// quota is the per-host event budget of kind per QuotaWindow.
func quota(kind contract.Kind) int {
	if kind == contract.KindDismiss {
		return contract.DismissQuota
	}
	return contract.AlertQuota
}

// deviceStatus is the result for a registration that is not alive: error
// when the host owns no such registration, dead when a provider retired it.
func deviceStatus(d store.DeviceState) contract.Status {
	switch d {
	case store.DeviceDead:
		return contract.StatusDead
	case store.DeviceAlive:
		return contract.StatusQueued
	}
	return contract.StatusError
}
