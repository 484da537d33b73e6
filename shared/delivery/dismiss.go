package delivery

import (
	"context"
	"errors"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
)

// dismiss handles an accepted dismissal (reference-behaviour §4.4): with the
// host's fence for the notification raised to fence, it removes the alerts
// the fence covers from batches, the registration's unleased pending alert
// batches, and queues itself as a batch of one, due now. Dismissals never
// coalesce.
func (a *Admission) dismiss(ctx context.Context, tx *store.Tx, ev *event, r store.Recipient,
	batches []store.BatchPayload, fence, deadline, now int64, out *outcome) error {
	if err := a.cancelAlerts(ctx, tx, ev, r.RegistrationID, batches, fence, now); err != nil {
		return err
	}
	out.open(store.NewBatch{
		ID: r.BatchID, Host: ev.host, RegistrationID: r.RegistrationID, Kind: contract.KindDismiss,
		Payload: a.payloads.single(r.BatchID, r.RegistrationID, ev), Members: 1,
		DueAt: now, ExpiresAt: deadline,
	})
	return nil
}

// cancelAlerts removes from batches, registration reg's, every alert of the
// same epoch and notificationId whose sequence is at or below fence. A batch
// left empty is dismissed, and its members' receipts with it; the alerts
// taken out of a batch that goes on are dismissed recipients. A batch whose
// members open under no key is left as it is: it expires at its claim, and
// one stored before sealing (payload.go) is fenced at its claim.
func (a *Admission) cancelAlerts(ctx context.Context, tx *store.Tx, ev *event, reg string, batches []store.BatchPayload, fence, now int64) error {
	for _, b := range batches {
		members, err := a.payloads.decode(b.ID, reg, b.Payload, false)
		if errors.Is(err, seal.ErrUnopenable) {
			continue
		}
		if err != nil {
			return err
		}
		var (
			keep []contract.Notification
			gone []string
		)
		for i := range members {
			if fenced(&members[i], ev.n, fence) {
				gone = append(gone, eventID(ev.host, &members[i]))
				continue
			}
			keep = append(keep, members[i])
		}
		switch {
		case len(gone) == 0:
		case len(keep) == 0:
			err = tx.DismissBatch(ctx, b.ID, now)
		default:
			err = tx.SetBatchMembers(ctx, b.ID, a.payloads.encode(b.ID, reg, keep), len(keep))
			if err == nil {
				err = tx.DismissRecipients(ctx, reg, gone, now)
			}
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
