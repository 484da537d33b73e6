package delivery

import (
	"context"
	"slices"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
)

// dismiss handles an accepted dismissal (reference-behaviour §4.4): it
// records or raises the host's fence for the notification, removes the
// alerts the fence covers from the registration's unleased pending batches,
// and queues itself as a batch of one, due now. Dismissals never coalesce.
func (a *Admission) dismiss(ctx context.Context, tx *store.Tx, ev *event, reg string,
	cancellable int, deadline, now int64, out *outcome) error {
	fence := ev.fence
	if !ev.fenced {
		var err error
		fence, err = tx.RaiseFence(ctx, ev.host, store.Fence{
			Epoch: ev.n.Epoch, NotificationID: ev.n.NotificationID, Seq: ev.n.Seq,
		}, now)
		if err != nil {
			return err
		}
		out.fenced, out.fence = true, fence
	}
	if cancellable > 0 {
		if err := cancelAlerts(ctx, tx, ev, reg, fence, now); err != nil {
			return err
		}
	}
	id, err := tx.InsertBatch(ctx, store.NewBatch{
		Host: ev.host, RegistrationID: reg, Kind: contract.KindDismiss,
		Payload: singlePayload(ev.item), Members: 1,
		DueAt: now, ExpiresAt: deadline,
	}, now)
	if err != nil {
		return err
	}
	out.due = append(out.due, due{batchID: id, at: now})
	return nil
}

// cancelAlerts removes from the registration's unleased pending alert batches
// every alert of the same epoch and notificationId whose sequence is at or
// below fence. A batch left empty is dismissed.
func cancelAlerts(ctx context.Context, tx *store.Tx, ev *event, reg string, fence, now int64) error {
	batches, err := tx.CancellableBatches(ctx, ev.host, reg, now)
	if err != nil {
		return err
	}
	for _, b := range batches {
		members, err := decodeMembers(b.ID, b.Payload)
		if err != nil {
			return err
		}
		keep := slices.DeleteFunc(slices.Clone(members), func(n contract.Notification) bool {
			return fenced(&n, ev.n, fence)
		})
		switch {
		case len(keep) == len(members):
		case len(keep) == 0:
			err = tx.DismissBatch(ctx, b.ID, now)
		default:
			err = tx.SetBatchMembers(ctx, b.ID, string(contract.AppendNotifications(nil, keep)), len(keep))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fenced reports whether the dismissal d, with its fence at seq fence,
// covers the alert n.
func fenced(n, d *contract.Notification, fence int64) bool {
	return n.EffectiveKind() == contract.KindAlert && n.NotificationID == d.NotificationID &&
		n.Epoch == d.Epoch && n.Seq <= fence
}
