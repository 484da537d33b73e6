package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"onorca.dev/push/shared/contract"
)

// Recipient is one (event, registration) pair that /v1/send accepts.
type Recipient struct {
	EventID        string
	RegistrationID string
	// Host is the sending host; the registration must be its live one.
	Host string
	// Fingerprint is the event's content hash: the recipient is recorded
	// only for a stored event with this content that has not expired, the
	// event stored with Fingerprint or with FormerFingerprint (see
	// NewEvent).
	Fingerprint       string
	FormerFingerprint string
	// Kind is the event's effective kind. Only an alert looks for an open
	// batch to join, and only a dismissal counts the batches it may cancel.
	Kind contract.Kind
	// Fence, for an alert with a notificationId, is its identity: the
	// recipient is not recorded when a dismissal fence of the host with the
	// same epoch and id has a sequence at or above Fence.Seq (decisions
	// table: ≤ is dropped at acceptance). Nil for anything else.
	Fence *Fence
	// BatchID is the batch the recipient opens if it joins none: its
	// receipt follows that batch.
	BatchID string
	// Joins, for an alert that may join the registration's open batch,
	// records the recipient with that batch when there is one
	// (Pending.Open): admission then moves it (Tx.MoveRecipient) to
	// BatchID only when it does not join after all.
	Joins bool
}

// OpenBatch is a registration's pending alert batch that a new alert may
// join (reference-behaviour §5.1): never attempted, due and expiring after
// now, the newest such. ID is empty when there is none.
type OpenBatch struct {
	ID        string
	Payload   string // JSON array of the members' notifications
	Members   int
	DueAt     int64
	ExpiresAt int64
}

// Pending is what [Tx.AddRecipient] saw of the event and of the
// registration's pending batches.
type Pending struct {
	// Deadline is the event's stored deadline, epoch milliseconds.
	Deadline int64
	// Open is the batch an alert may join, read only for a recipient that
	// Joins (on PostgreSQL, a send without NoJoin); empty otherwise.
	Open OpenBatch
	// Cancellable counts, for a dismissal, the registration's unleased
	// pending alert batches, which may hold alerts it cancels.
	Cancellable int
	// Device is the registration as the recipient found it (live, the
	// host's): what a delivery leased at admission sends to
	// (NewBatch.LeaseToken).
	Device Device
	// InFlight reports whether a pending batch of the registration holds
	// a live lease: a new batch due now may be leased at admission only
	// when none does (one delivery per registration in flight).
	InFlight bool
}

// AddRecipient records r at now unless the pair is already recorded, the
// event is missing, expired or has other content, the registration is not a
// live one of r.Host, or r.Fence is behind a dismissal fence; it reports
// whether it recorded it. When it did, it also returns the event's deadline
// and what admission needs next of the registration's pending batches, read
// in the same statement so that accepting an alert costs one round trip
// fewer.
func (t *Tx) AddRecipient(ctx context.Context, r Recipient, now int64) (bool, Pending, error) {
	s := addRecipientStmt(r, now, true)
	return scanAddedRecipient(t.r.queryRow(ctx, s.query, s.args...), r.RegistrationID, r.Host)
}

// addRecipientStmt is AddRecipient's statement; with lease it also reads
// what a lease at admission needs (SendStart.Lease), else those columns are
// NULL.
func addRecipientStmt(r Recipient, now int64, lease bool) statement {
	leaseCols := `CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS BIGINT), 0`
	if lease {
		leaseCols = `(SELECT token FROM push_devices WHERE registration_id = $2),
			(SELECT platform FROM push_devices WHERE registration_id = $2),
			(SELECT apns_environment FROM push_devices WHERE registration_id = $2),
			(SELECT badge_count FROM push_devices WHERE registration_id = $2),
			EXISTS (SELECT 1 FROM push_delivery_batches
				WHERE registration_id = $2 AND state = 'pending' AND lease_until > $3)`
	}
	var fence Fence
	if r.Fence != nil {
		fence = *r.Fence
	}
	// The batch the recipient is recorded with, and the open batch it
	// reads: only an alert that may join reads one (Recipient.Joins).
	batch, open := `$10`, `CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS INTEGER), CAST(NULL AS BIGINT),
			CAST(NULL AS BIGINT)`
	if r.Joins {
		batch = `COALESCE((SELECT batch_id FROM open_batch), $10)`
		open = `(SELECT batch_id FROM open_batch), (SELECT payload_json FROM open_batch),
			(SELECT members FROM open_batch), (SELECT due_at FROM open_batch),
			(SELECT expires_at FROM open_batch)`
	}
	// An empty notification id matches no fence: a dismissal always has one.
	return statement{op: "add recipient", query: `WITH open_batch AS (
			SELECT batch_id, payload_json, members, due_at, expires_at FROM push_delivery_batches
			WHERE registration_id = $2 AND host_fingerprint = $4 AND state = 'pending' AND kind = 'alert'
				AND attempts = 0 AND due_at > $3 AND expires_at > $3
			ORDER BY due_at DESC LIMIT 1)
		INSERT INTO push_event_recipients (event_id, registration_id, created_at, batch_id, ordinal)
		SELECT $1, $2, CAST($3 AS BIGINT), ` + batch + `,
			(SELECT COALESCE(MAX(ordinal), 0) + 1 FROM push_event_recipients WHERE event_id = $1)
		WHERE EXISTS (SELECT 1 FROM push_devices
				WHERE registration_id = $2 AND host_fingerprint = $4 AND dead_at IS NULL)
			AND EXISTS (SELECT 1 FROM push_events
				WHERE event_id = $1 AND fingerprint IN ($9, $11) AND expires_at > $3)
			AND NOT EXISTS (SELECT 1 FROM push_dismissed_events
				WHERE host_fingerprint = $4 AND notification_epoch = $5 AND notification_id = $6
					AND notification_seq >= $7)
		ON CONFLICT (event_id, registration_id) DO NOTHING
		RETURNING
			(SELECT expires_at FROM push_events WHERE event_id = $1),
			` + open + `,
			CASE WHEN $8 = 'dismiss' THEN (SELECT COUNT(*) FROM push_delivery_batches
				WHERE registration_id = $2 AND host_fingerprint = $4 AND state = 'pending'
					AND kind = 'alert' AND lease_until <= $3) ELSE 0 END,
			` + leaseCols,
		args: []any{r.EventID, r.RegistrationID, now, r.Host, fence.Epoch, fence.NotificationID, fence.Seq,
			string(r.Kind), r.Fingerprint, r.BatchID, r.FormerFingerprint}}
}

// scanAddedRecipient reads AddRecipient's row, which is there only when
// the recipient was recorded.
func scanAddedRecipient(row scanner, registrationID, host string) (bool, Pending, error) {
	var p pendingRow
	err := row.Scan(p.dest(true)...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, Pending{}, nil
	}
	if err != nil {
		return false, Pending{}, fmt.Errorf("add recipient: %w", err)
	}
	return true, p.pending(registrationID, host), nil
}

// pendingRow is what AddRecipient's statement reads of the event and the
// open batch, the open batch's columns NULL when there is none.
type pendingRow struct {
	deadline, cancellable     int64
	id, payload               sql.NullString
	members, dueAt, expiresAt sql.NullInt64
	token, platform, env      sql.NullString
	badge                     sql.NullInt64
	inFlight                  bool
}

// dest returns the scan destinations, in the statement's column order;
// with lease, those of what a lease at admission reads too.
func (r *pendingRow) dest(lease bool) []any {
	d := []any{&r.deadline, &r.id, &r.payload, &r.members, &r.dueAt, &r.expiresAt, &r.cancellable}
	if lease {
		d = append(d, &r.token, &r.platform, &r.env, &r.badge, &r.inFlight)
	}
	return d
}

func (r *pendingRow) pending(registrationID, host string) Pending {
	p := Pending{Deadline: r.deadline, Cancellable: int(r.cancellable), InFlight: r.inFlight,
		Device: Device{RegistrationID: registrationID, HostFingerprint: host, Token: r.token.String,
			Platform: contract.Platform(r.platform.String), APNSEnvironment: contract.APNSEnvironment(r.env.String),
			Badged: r.badge.Valid, Badge: r.badge.Int64}}
	if r.id.Valid {
		p.Open = OpenBatch{ID: r.id.String, Payload: r.payload.String, Members: int(r.members.Int64),
			DueAt: r.dueAt.Int64, ExpiresAt: r.expiresAt.Int64}
	}
	return p
}
