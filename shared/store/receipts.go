package store

import (
	"context"
	"database/sql"
	"fmt"

	"onorca.dev/push/shared/contract"
)

// Delivery receipts (issue "delivery receipts"). A recipient's fate is its
// batch's: each recipient names the batch that carries it (batch_id), so an
// outcome recorded for a batch is recorded for all its members in the same
// statement, at no cost. Only a recipient that leaves its batch, or never
// joins one, has a state of its own: a dismissal took it out of a batch that
// went on with other members, or fenced it at acceptance.

// recipientDismissed is the state a recipient holds of its own.
const recipientDismissed = "dismissed"

// MoveRecipient makes the recipient (eventID, registrationID) a member of
// batch batchID, the open batch it joined instead of the one it was recorded
// with. It is a later write.
func (t *Tx) MoveRecipient(ctx context.Context, eventID, registrationID, batchID string) error {
	err := t.later(ctx, "move recipient", `UPDATE push_event_recipients SET batch_id = $3
		WHERE event_id = $1 AND registration_id = $2`, eventID, registrationID, batchID)
	if err != nil {
		return fmt.Errorf("move recipient: %w", err)
	}
	return nil
}

// DismissRecipients records that a dismissal took the recipients of
// registrationID for eventIDs out of their batch at now. It is a later
// write.
func (t *Tx) DismissRecipients(ctx context.Context, registrationID string, eventIDs []string, now int64) error {
	if len(eventIDs) == 0 {
		return nil
	}
	args := appendStrings([]any{registrationID, recipientDismissed, now}, eventIDs)
	err := t.later(ctx, "dismiss recipients", `UPDATE push_event_recipients SET state = $2, state_at = $3
		WHERE registration_id = $1 AND event_id IN (`+placeholders(4, len(eventIDs))+`)`, args...)
	if err != nil {
		return fmt.Errorf("dismiss recipients: %w", err)
	}
	return nil
}

// AddDismissedRecipient records the recipient (eventID, registrationID) at
// now as dismissed, in no batch: an alert accepted (answered queued) that a
// dismissal fence had already covered. A recorded pair is left as it is. It
// is a later write.
func (t *Tx) AddDismissedRecipient(ctx context.Context, eventID, registrationID string, now int64) error {
	err := t.later(ctx, "add dismissed recipient", `INSERT INTO push_event_recipients
		(event_id, registration_id, created_at, ordinal, state, state_at)
		SELECT $1, $2, CAST($3 AS BIGINT),
			(SELECT COALESCE(MAX(ordinal), 0) + 1 FROM push_event_recipients WHERE event_id = $1), $4, CAST($3 AS BIGINT)
		ON CONFLICT (event_id, registration_id) DO NOTHING`, eventID, registrationID, now, recipientDismissed)
	if err != nil {
		return fmt.Errorf("add dismissed recipient: %w", err)
	}
	return nil
}

// EventReceipts is what [Store.Receipts] found: the events it knows, each
// with its recipients' receipts in the order they were first accepted.
type EventReceipts map[string][]contract.RecipientReceipt

// Receipts reads the receipts of host's events among eventIDs that were
// created at or after since (the retention), in one statement. An event
// missing from the answer is unknown: another host's, pruned, or never
// recorded.
func (s *Store) Receipts(ctx context.Context, host string, eventIDs []string, since int64) (EventReceipts, error) {
	if len(eventIDs) == 0 {
		return EventReceipts{}, nil
	}
	args := appendStrings([]any{host, since}, eventIDs)
	// A recipient recorded before receipts existed has neither a batch
	// nor a state of its own: nothing tells its fate, so it is left out.
	rows, err := s.db.QueryContext(ctx, `SELECT e.event_id, r.registration_id, r.created_at, r.state, r.state_at,
			b.state, b.reason, b.finished_at, b.attempted_at
		FROM push_events e
		LEFT JOIN push_event_recipients r ON r.event_id = e.event_id
			AND (r.state IS NOT NULL OR r.batch_id IS NOT NULL)
		LEFT JOIN push_delivery_batches b ON b.batch_id = r.batch_id
		WHERE e.host_fingerprint = $1 AND e.created_at >= $2 AND e.event_id IN (`+placeholders(3, len(eventIDs))+`)
		ORDER BY e.event_id, r.ordinal`, args...)
	if err != nil {
		return nil, fmt.Errorf("receipts: %w", err)
	}
	defer rows.Close()
	out := make(EventReceipts)
	for rows.Next() {
		var (
			event                         string
			reg, own, batch, reason       sql.NullString
			accepted, ownAt, end, attempt sql.NullInt64
		)
		if err := rows.Scan(&event, &reg, &accepted, &own, &ownAt, &batch, &reason, &end, &attempt); err != nil {
			return nil, fmt.Errorf("receipts: %w", err)
		}
		list := out[event]
		if list == nil {
			list = []contract.RecipientReceipt{}
		}
		if reg.Valid {
			r := contract.RecipientReceipt{RegistrationID: reg.String}
			switch {
			case own.Valid:
				r.Status, r.At = contract.ReceiptStatus(own.String), ownAt.Int64
			case !batch.Valid:
				// Its batch was never written (it cannot be pruned
				// before the recipient): it waits to be.
				r.Status, r.At = contract.ReceiptQueued, accepted.Int64
			default:
				r.Status, r.At, r.Reason = batchFate(BatchState(batch.String), reason.String,
					accepted.Int64, end.Int64, attempt)
			}
			list = append(list, r)
		}
		out[event] = list
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("receipts: %w", err)
	}
	return out, nil
}

// batchFate is a member's receipt from its batch: pending is queued since
// acceptance, or retrying since its last failed attempt; a finished batch's
// state is the member's, since the batch finished. Only the failures carry
// the reason: a batch dismissed or dropped while it waited for a retry keeps
// that attempt's.
func batchFate(state BatchState, reason string, accepted, finished int64, attempted sql.NullInt64) (contract.ReceiptStatus, int64, string) {
	switch state {
	case BatchPending:
		if attempted.Valid {
			return contract.ReceiptRetrying, attempted.Int64, reason
		}
		return contract.ReceiptQueued, accepted, ""
	case BatchDead, BatchError, BatchExpired:
		return contract.ReceiptStatus(state), finished, reason
	}
	return contract.ReceiptStatus(state), finished, ""
}
