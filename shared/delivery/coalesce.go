package delivery

import (
	"context"
	"errors"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
)

// coalesceAlert puts an accepted alert into a batch (reference-behaviour
// §5.1): it joins the registration's open batch when the result may still be
// delivered as one summary; otherwise the open batch becomes due now and the
// alert opens a batch of its own, due when the window closes.
//
// A sealed alert is never summarised (decisions table): the phone must open
// each one itself, and today's phones read no summaryMembers. It joins
// nothing, leaves the open batch as it is, and opens a batch of its own due
// now, which nothing joins either: a batch is joinable only while its due
// time is after now (store.OpenBatch), also with a window of 0 and a clock
// that has not moved.
//
// The recipient r was recorded with the open batch when there was one
// (store.Recipient.Joins), and with the batch it opens otherwise; when it
// does not join the open batch after all, it moves to the one it opens.
func (a *Admission) coalesceAlert(ctx context.Context, tx *store.Tx, ev *event, r store.Recipient,
	open store.OpenBatch, deadline, now int64, out *outcome) error {
	window := a.coalesce
	if ev.n.Sealed() {
		open, window = store.OpenBatch{}, 0
	}
	if open.ID != "" {
		payload, members, ok, err := a.join(ev, r.RegistrationID, open, deadline)
		if err != nil {
			return err
		}
		if ok {
			// The recipient was recorded with the open batch (r.Joins);
			// place updates every batch joined at once.
			out.joined = append(out.joined, store.Join{ID: open.ID, Payload: payload, Members: members,
				ExpiresAt: min(open.ExpiresAt, deadline)})
			return nil
		}
		if err := tx.MakeDue(ctx, open.ID, now); err != nil {
			return err
		}
		if err := tx.MoveRecipient(ctx, ev.id, r.RegistrationID, r.BatchID); err != nil {
			return err
		}
		out.due = append(out.due, due{batchID: open.ID, registrationID: r.RegistrationID, at: now})
	}
	dueAt := dueTime(now, window, deadline)
	out.open(store.NewBatch{
		ID: r.BatchID, Host: ev.host, RegistrationID: r.RegistrationID, Kind: contract.KindAlert,
		Payload: a.payloads.single(r.BatchID, r.RegistrationID, ev), Members: 1,
		DueAt: dueAt, ExpiresAt: deadline,
	})
	return nil
}

// dueTime is when a new alert batch opened at now with the given deadline is
// due: when the coalescing window closes, but no later than
// contract.DispatchMargin before the deadline, so that the dispatch, the
// claim and the provider request fit before it; at once when less than the
// margin is left (decisions table, "short deadlines").
func dueTime(now, window, deadline int64) int64 {
	return max(now, min(now+window, deadline-contract.DispatchMargin.Milliseconds()))
}

// join decides whether ev may join the open batch of registration reg and
// returns the joined payload and member count if so. A batch whose members
// open under no key is not joined: it becomes due and expires at its claim;
// nor is a batch stored before sealing (payload.go): it becomes due and is
// delivered at its claim. The joined batch must still summarise
// (2..32 members, every one with a notificationId, no dismissal), its
// deadline must stay at least contract.DispatchMargin after its due time (a
// short-lived alert never shortens the life of the alerts already waiting),
// and its provider payloads must fit contract.MaxProviderPayload as the
// providers will build them (reference-behaviour §5.2, measured rather than
// estimated).
func (a *Admission) join(ev *event, reg string, open store.OpenBatch, deadline int64) (string, int, bool, error) {
	if ev.n.NotificationID == "" || open.Members+1 > contract.MaxBatchMembers ||
		min(open.ExpiresAt, deadline) < open.DueAt+contract.DispatchMargin.Milliseconds() {
		return "", 0, false, nil
	}
	members, err := a.payloads.summaries(open.ID, reg, open.Payload)
	if errors.Is(err, seal.ErrUnopenable) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	members = append(members, *ev.n)
	if !push.CanSummarize(members) || !fits(ev.host, members, min(open.ExpiresAt, deadline)) {
		return "", 0, false, nil
	}
	return a.payloads.join(open.Payload, open.ID, reg, ev), len(members), true, nil
}

// fitsMessage reports whether m fits contract.MaxProviderPayload as the APNs
// body and as the FCM message, as fits measures a batch's.
func fitsMessage(m push.Message) bool {
	return len(apns.Body(m)) <= contract.MaxProviderPayload && fcm.Size(m) <= contract.MaxProviderPayload
}

// fits reports whether the batch's message fits contract.MaxProviderPayload
// both as the APNs body and as the FCM message (without the token, at its
// largest ttl), built by the providers' own code.
func fits(host string, members []contract.Notification, deadline int64) bool {
	return fitsMessage(push.Build(host, members, deadline))
}
