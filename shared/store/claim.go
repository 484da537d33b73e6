package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"onorca.dev/push/shared/contract"
)

// The states a batch finishes in (reference-behaviour §8.2).
const (
	BatchSent    BatchState = "sent"
	BatchDead    BatchState = "dead"
	BatchError   BatchState = "error"
	BatchExpired BatchState = "expired"
	// BatchDropped: its registration was deleted before it was sent.
	BatchDropped BatchState = "dropped"
)

// ClaimView is what a delivery needs to decide on a claim, read in one
// statement: the batch, the latest live lease another pending batch of its
// registration holds (one delivery per registration is in flight at a
// time), and the registration as it stands now (Device.RegistrationID is
// empty when it was deleted).
type ClaimView struct {
	Batch       Batch
	LeasedUntil int64
	// HostFenced reports whether the host has any dismissal fence, so a
	// claim looks fences up only then.
	HostFenced bool
	Device     Device
}

// ClaimView reads the view of batch id at now; ErrNoRow when there is no
// such batch. Call it under HostTx of the batch's host.
func (t *Tx) ClaimView(ctx context.Context, id string, now int64) (ClaimView, error) {
	var v ClaimView
	b := &v.Batch
	var leased sql.NullInt64
	var fenced int
	var reg, token, platform, env sql.NullString
	var dead, stamped, badge sql.NullInt64
	err := t.r.queryRow(ctx, `SELECT b.batch_id, b.host_fingerprint, b.registration_id, b.kind, b.payload_json,
		b.members, b.state, b.due_at, b.expires_at, b.lease_until, b.attempts, b.scheduled_at, b.created_at,
		(SELECT MAX(o.lease_until) FROM push_delivery_batches o WHERE o.registration_id = b.registration_id
			AND o.batch_id <> b.batch_id AND o.state = 'pending' AND o.lease_until > $2),
		(SELECT COUNT(*) FROM (SELECT 1 FROM push_dismissed_events f
			WHERE f.host_fingerprint = b.host_fingerprint LIMIT 1) AS any_fence),
		d.registration_id, d.token, d.platform, d.apns_environment, d.dead_at, b.badge, d.badge_count
		FROM push_delivery_batches b LEFT JOIN push_devices d ON d.registration_id = b.registration_id
		WHERE b.batch_id = $1`, id, now).
		Scan(&b.ID, &b.Host, &b.RegistrationID, &b.Kind, &b.Payload, &b.Members, &b.State,
			&b.DueAt, &b.ExpiresAt, &b.LeaseUntil, &b.Attempts, &b.ScheduledAt, &b.CreatedAt,
			&leased, &fenced, &reg, &token, &platform, &env, &dead, &stamped, &badge)
	if errors.Is(err, sql.ErrNoRows) {
		return ClaimView{}, ErrNoRow
	}
	if err != nil {
		return ClaimView{}, fmt.Errorf("claim view: %w", err)
	}
	v.LeasedUntil, v.HostFenced = leased.Int64, fenced > 0
	b.Badge = stamped.Int64
	if reg.Valid {
		v.Device = Device{RegistrationID: reg.String, HostFingerprint: b.Host, Token: token.String,
			Platform: contract.Platform(platform.String), APNSEnvironment: contract.APNSEnvironment(env.String),
			Dead: dead.Valid, Badged: badge.Valid, Badge: badge.Int64}
	}
	return v, nil
}

// FenceKey names a dismissal fence within a host.
type FenceKey struct {
	Epoch          string
	NotificationID string
}

// Fences returns the host's dismissal fences for the given notification ids,
// keyed by epoch and id, with their sequence.
func (t *Tx) Fences(ctx context.Context, host string, ids []string) (map[FenceKey]int64, error) {
	out := make(map[FenceKey]int64)
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, host)
	marks := make([]string, len(ids))
	for i, id := range ids {
		args = append(args, id)
		marks[i] = "$" + strconv.Itoa(i+2)
	}
	rows, err := t.r.query(ctx, `SELECT notification_epoch, notification_id, notification_seq
		FROM push_dismissed_events WHERE host_fingerprint = $1 AND notification_id IN (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read fences: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k FenceKey
		var seq int64
		if err := rows.Scan(&k.Epoch, &k.NotificationID, &seq); err != nil {
			return nil, fmt.Errorf("read fences: %w", err)
		}
		out[k] = seq
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read fences: %w", err)
	}
	return out, nil
}

// LeaseBatch leases a pending batch to token until leaseUntil and counts the
// attempt; it returns the new attempt count. It must be the transaction's
// last statement: on PostgreSQL the commit travels with it.
func (t *Tx) LeaseBatch(ctx context.Context, id, token string, leaseUntil int64) (int, error) {
	var attempts int
	err := t.r.final(ctx, `UPDATE push_delivery_batches
		SET lease_token = $2, lease_until = $3, attempts = attempts + 1
		WHERE batch_id = $1 AND state = 'pending' RETURNING attempts`, id, token, leaseUntil).Scan(&attempts)
	if err != nil {
		return 0, fmt.Errorf("lease batch: %w", err)
	}
	return attempts, nil
}

// EndBatch finishes a pending batch that no delivery holds in state with
// reason, clearing its payload (a claim that finds it expired). It reports
// whether it ended the batch.
func (t *Tx) EndBatch(ctx context.Context, id string, state BatchState, reason string, now int64) (bool, error) {
	n, err := t.r.exec(ctx, `UPDATE push_delivery_batches
		SET state = $2, reason = $3, payload_json = $4, finished_at = $5, lease_token = NULL, lease_until = 0
		WHERE batch_id = $1 AND state = 'pending'`,
		id, string(state), nullable(reason), EmptyPayload, now)
	if err != nil {
		return false, fmt.Errorf("end batch: %w", err)
	}
	return n == 1, nil
}

// RetryBatch returns a leased batch to pending, due at dueAt, with its lease
// cleared and scheduled_at set to now (the caller schedules it after
// commit), and records the failed attempt's reason and time for its
// receipts. It is no longer held back (its own task carries the retry).
// Only the lease holder may do it; it reports whether it did.
func (t *Tx) RetryBatch(ctx context.Context, id, token, reason string, dueAt, now int64) (bool, error) {
	n, err := t.exec(ctx, `UPDATE push_delivery_batches
		SET due_at = $3, lease_token = NULL, lease_until = 0, scheduled_at = $4, reason = $5, attempted_at = $4,
			held_at = 0
		WHERE batch_id = $1 AND state = 'pending' AND lease_token = $2`, id, token, dueAt, now, nullable(reason))
	if err != nil {
		return false, fmt.Errorf("retry batch: %w", err)
	}
	return n == 1, nil
}

// DueBatches returns the registration's pending batches that are due at now,
// unleased and unexpired, oldest due first, marking them scheduled at now: the caller hands
// them to the scheduler after commit, so a batch held back by this
// registration's lease goes out as soon as the lease ends.
func (t *Tx) DueBatches(ctx context.Context, registrationID string, now int64) ([]string, error) {
	rows, err := t.r.query(ctx, `UPDATE push_delivery_batches SET scheduled_at = $2
		WHERE registration_id = $1 AND state = 'pending' AND due_at <= $2 AND lease_until <= $2 AND expires_at > $2
		RETURNING batch_id, due_at, created_at`, registrationID, now)
	if err != nil {
		return nil, fmt.Errorf("due batches: %w", err)
	}
	ids, err := scanDue(rows)
	if err != nil {
		return nil, fmt.Errorf("due batches: %w", err)
	}
	return ids, nil
}

func scanIDs(rows rowSet) ([]string, error) {
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
