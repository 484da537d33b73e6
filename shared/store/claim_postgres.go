package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"onorca.dev/push/shared/contract"
)

// postgresClaim is a claim in one statement (see [Store.ClaimBatch]): it reads
// the batch, the latest live lease of the registration's other pending
// batches, the registration and the host's fences of the members' ids, and
// takes the lease, or ends the batch as expired, by the same rules as
// claimInTx. It runs after the host lock in the same transaction, so its
// snapshot is taken once the lock is held and sees every change of the
// claims and admissions before it; the updates also test the row itself, so
// a change made without the lock meanwhile (the sweep expiring the batch) is
// never overwritten.
//
// Every row is named by a value, the batch's id ($1) or its registration
// (a subquery of b), never by a join with b: joined, a plan could read
// every pending batch, or every batch, and keep b's (TestNoPlanReadsATableWhole
// saw the first on a day of finished batches, scripts/pgcount -mode burst
// the second on a small table, 0.4 M instructions a claim).
//
// The registration's batch in flight is found by the update that marks
// it as holding (held, heldMark), and only when the claim would otherwise
// lease its batch: the row orders the claim with the holder's end, which
// takes no host lock (endHolder). The claimed batch's one update (leased)
// either takes the lease, negating a held_at that an earlier hold-back set
// (the batches held back with it now wait behind it), or marks it held
// back (held_at now), which SQLite's claim does in a statement of its own
// before it (holdBack).
//
// $1 batch id, $2 now, $3 lease token, $4 lease until, $5 expired reason,
// $6 empty payload.
const postgresClaim = `WITH b AS (
		SELECT * FROM push_delivery_batches WHERE batch_id = $1),
	held AS (
		` + heldMark + `= (SELECT registration_id FROM b) AND o.batch_id <> $1
			AND EXISTS (SELECT 1 FROM b WHERE b.state = 'pending' AND b.lease_until <= $2
				AND b.expires_at > $2 AND b.due_at <= $2)
		RETURNING o.lease_until),
	sib AS (SELECT MAX(lease_until) AS until FROM held),
	leased AS (
		UPDATE push_delivery_batches u SET
			lease_token = CASE WHEN s.until IS NULL THEN $3 ELSE u.lease_token END,
			lease_until = CASE WHEN s.until IS NULL THEN $4 ELSE u.lease_until END,
			attempts = u.attempts + CASE WHEN s.until IS NULL THEN 1 ELSE 0 END,
			held_at = CASE WHEN s.until IS NULL THEN -abs(u.held_at) ELSE $2 END
		FROM b, sib s WHERE u.batch_id = $1 AND b.state = 'pending' AND b.lease_until <= $2
			AND b.expires_at > $2 AND b.due_at <= $2 AND u.state = 'pending' AND u.lease_until <= $2
		RETURNING u.attempts, s.until IS NULL AS took),
	expired AS (
		UPDATE push_delivery_batches u SET state = 'expired', reason = $5, payload_json = $6, finished_at = $2,
			lease_token = NULL, lease_until = 0
		FROM b WHERE u.batch_id = $1 AND b.state = 'pending' AND b.lease_until <= $2
			AND b.expires_at <= $2 AND u.state = 'pending' AND u.lease_until <= $2 AND u.badge IS NULL
		RETURNING 1),
	fences AS (
		SELECT f.notification_epoch, f.notification_id, f.notification_seq
		FROM push_dismissed_events f, b
		WHERE EXISTS (SELECT 1 FROM leased WHERE took) AND f.host_fingerprint = b.host_fingerprint
			AND f.notification_id IN (SELECT m ->> 'notificationId' FROM jsonb_array_elements(b.payload_json::jsonb) m))
	SELECT b.batch_id, b.host_fingerprint, b.registration_id, b.kind, b.payload_json, b.members, b.state,
		b.due_at, b.expires_at, b.lease_until, b.attempts, b.scheduled_at, b.created_at,
		(SELECT until FROM sib), (SELECT attempts FROM leased WHERE took), EXISTS (SELECT 1 FROM expired),
		d.registration_id, d.token, d.platform, d.apns_environment, d.dead_at, b.badge, d.badge_count,
		ARRAY(SELECT notification_epoch FROM fences), ARRAY(SELECT notification_id FROM fences),
		ARRAY(SELECT notification_seq FROM fences)
	FROM b LEFT JOIN push_devices d ON d.registration_id = b.registration_id`

// claim runs postgresClaim as the transaction's final statement: the host
// lock and the claim go in one round trip, whose Sync commits them
// (pipeline).
func (postgresDialect) claim(ctx context.Context, t *Tx, a claimArgs) (Claim, error) {
	var (
		c                         Claim
		held, attempts, dead      sql.NullInt64
		stamped, badge            sql.NullInt64
		reg, token, platform, env sql.NullString
		epochs, notificationIDs   []string
		seqs                      []int64
	)
	b := &c.Batch
	err := t.r.final(ctx, postgresClaim, a.id, a.now, a.token, a.leaseUntil, nullable(a.expiredReason), EmptyPayload).
		Scan(&b.ID, &b.Host, &b.RegistrationID, &b.Kind, &b.Payload, &b.Members, &b.State,
			&b.DueAt, &b.ExpiresAt, &b.LeaseUntil, &b.Attempts, &b.ScheduledAt, &b.CreatedAt,
			&held, &attempts, &c.Expired, &reg, &token, &platform, &env, &dead, &stamped, &badge,
			&epochs, &notificationIDs, &seqs)
	if errors.Is(err, sql.ErrNoRows) {
		return Claim{}, nil
	}
	if err != nil {
		return Claim{}, fmt.Errorf("claim: %w", err)
	}
	if attempts.Valid {
		c.Leased, c.Attempts = true, int(attempts.Int64)
		c.Fences = make(map[FenceKey]int64, len(epochs))
		for i := range epochs {
			c.Fences[FenceKey{Epoch: epochs[i], NotificationID: notificationIDs[i]}] = seqs[i]
		}
	}
	switch {
	case c.Leased || c.Expired || b.State != BatchPending:
	case b.LeaseUntil > a.now:
		c.HeldUntil = b.LeaseUntil
	case b.ExpiresAt <= a.now:
		c.stamped = stamped.Valid // left for ClaimBatch to end, settling its raise
	case b.DueAt > a.now:
	case held.Valid:
		c.HeldUntil = held.Int64
	}
	b.Badge = stamped.Int64
	if reg.Valid {
		c.Device = Device{RegistrationID: reg.String, HostFingerprint: b.Host, Token: token.String,
			Platform: contract.Platform(platform.String), APNSEnvironment: contract.APNSEnvironment(env.String),
			Dead: dead.Valid, Badged: badge.Valid, Badge: badge.Int64}
	}
	return c, nil
}

// claim runs the claim's statements in the immediate transaction.
func (sqliteDialect) claim(ctx context.Context, t *Tx, a claimArgs) (Claim, error) {
	if err := t.holdBack(ctx, a.id, a.now); err != nil {
		return Claim{}, err
	}
	return claimInTx(ctx, t, a)
}
