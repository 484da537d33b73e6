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
// record the event (with the ownership and quota checks), record the
// recipient (with the fence check, reading the open batch), and open or
// join a batch.
func (a *Admission) accept(ctx context.Context, tx *store.Tx, ev *event, reg string, now int64, out *outcome) error {
	deadline, verified := ev.deadline, false
	if !ev.known {
		st, d, err := recordEvent(ctx, tx, ev, reg, now)
		if err != nil || st != contract.StatusQueued {
			out.status = st
			return err
		}
		deadline, verified = d, true
	}
	out.known, out.deadline = true, deadline
	added, pending, err := tx.AddRecipient(ctx, store.Recipient{
		EventID: ev.id, RegistrationID: reg, Host: ev.host, Kind: ev.kind, Fence: ev.fenceOf(),
	}, now)
	if err != nil {
		return err
	}
	if !added {
		// A repeat, or an alert behind a dismissal fence: queued, nothing
		// new. When the event step was skipped, the registration itself
		// may be the reason.
		out.status = contract.StatusQueued
		if !verified {
			c, err := tx.CheckEvent(ctx, ev.host, reg, ev.id)
			if err != nil {
				return err
			}
			out.status = deviceStatus(c.Device)
		}
		return nil
	}
	out.status = contract.StatusQueued
	if ev.kind == contract.KindDismiss {
		return a.dismiss(ctx, tx, ev, reg, pending.Cancellable, deadline, now, out)
	}
	return a.coalesceAlert(ctx, tx, ev, reg, pending.Open, deadline, now, out)
}

// recordEvent records the event for a live registration of the host, or finds
// why it did not: it returns queued with the event's deadline when the
// registration may go on, and otherwise the registration's status.
func recordEvent(ctx context.Context, tx *store.Tx, ev *event, reg string, now int64) (contract.Status, int64, error) {
	// A passed expiresAt makes any deadline pass, new or stored (the
	// stored one is at most the same expiresAt, or the content differs).
	if ev.deadline > now {
		inserted, err := tx.InsertEvent(ctx, store.NewEvent{
			ID: ev.id, Host: ev.host, Kind: ev.kind, Fingerprint: ev.fingerprint, RegistrationID: reg,
			Deadline: ev.deadline, QuotaSince: now - contract.QuotaWindow.Milliseconds(), Quota: quota(ev.kind),
		}, now)
		if err != nil || inserted {
			return contract.StatusQueued, ev.deadline, err
		}
	}
	c, err := tx.CheckEvent(ctx, ev.host, reg, ev.id)
	switch {
	case err != nil:
		return "", 0, err
	case c.Device != store.DeviceAlive:
		return deviceStatus(c.Device), 0, nil
	case ev.deadline <= now:
		return contract.StatusError, 0, nil
	case !c.Found:
		return contract.StatusRateLimited, 0, nil
	case c.Fingerprint != ev.fingerprint || c.ExpiresAt <= now:
		// Same identity with other content, or a duplicate after the
		// event's life.
		return contract.StatusError, 0, nil
	}
	return contract.StatusQueued, c.ExpiresAt, nil
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
