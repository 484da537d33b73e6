package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"onorca.dev/push/shared/contract"
)

// StampBadge raises the badge of registrationID by n, never past
// contract.MaxBadge, and records on batch id, leased to token, which must
// carry n notifications and have no badge yet (a batch's first attempt),
// the new count, what was added and the registration's badge epoch, so that
// the raise is made once per push and can be given back when the batch
// ends unsent (settleExpired). It returns the new count, or 0 (changing nothing)
// when the registration has no badge or the batch is not so held. One
// transaction, one round trip on PostgreSQL: the stamp waits and travels
// with the raise and the commit.
func (s *Store) StampBadge(ctx context.Context, id, token, registrationID string, n int) (int64, error) {
	var badge sql.NullInt64
	err := s.Tx(ctx, func(t *Tx) error {
		err := t.later(ctx, "stamp badge", `UPDATE push_delivery_batches SET
				badge = CASE WHEN d.badge_count + $4 > $5 THEN $5 ELSE d.badge_count + $4 END,
				badge_raised = CASE WHEN d.badge_count + $4 > $5 THEN $5 - d.badge_count ELSE $4 END,
				badge_epoch = d.badge_epoch
			FROM push_devices d
			WHERE push_delivery_batches.batch_id = $1 AND push_delivery_batches.state = 'pending'
				AND push_delivery_batches.lease_token = $2 AND push_delivery_batches.badge IS NULL
				AND d.registration_id = $3 AND d.badge_count IS NOT NULL`,
			id, token, registrationID, int64(n), int64(contract.MaxBadge))
		if err != nil {
			return err
		}
		// The raise is the stamp's: made only while the count is still
		// the one the stamp read, in the same epoch, so a second call
		// raises nothing.
		err = t.r.final(ctx, `UPDATE push_devices SET badge_count = b.badge
			FROM push_delivery_batches b
			WHERE push_devices.registration_id = $3 AND b.batch_id = $1 AND b.state = 'pending' AND b.lease_token = $2
				AND b.badge_epoch = push_devices.badge_epoch AND push_devices.badge_count + b.badge_raised = b.badge
			RETURNING push_devices.badge_count`, id, token, registrationID).Scan(&badge)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("stamp badge: %w", err)
	}
	return badge.Int64, nil
}

// expireSettling is the update that ends pending batches as expired
// (clearing their payloads, $1 now, $2 the empty payload, $3 the reason)
// and settles their badge raises as it ends them: a positive raise is
// negated, so that it is given back once. Its condition completes it; it
// returns each batch's registration, badge epoch and new raise, which
// settleExpired reads.
const expireSettling = `UPDATE push_delivery_batches
		SET state = 'expired', reason = $3, payload_json = $2, finished_at = $1, lease_token = NULL, lease_until = 0,
			badge_raised = CASE WHEN badge_raised > 0 THEN -badge_raised ELSE badge_raised END
		WHERE `

// settleExpired runs query (expireSettling and its condition) in t and
// gives back, in the same transaction, the raises it settled: each
// registration's count goes down by what its batches' first attempts
// added, never below 0, and only in the epoch the raise was made in (a
// count set since, by PUT badge or a new token, is the phone's). It
// returns how many batches it ended and how many raises it gave back.
//
// Every batch that ends without reaching a provider settles its raise in
// the transaction that ends it (giveBackLeased, lowerRaise, and this), so
// none is left owed and no index of owed batches is kept (migration 0017).
// Two ends of one batch at once end and settle it once: the second waits
// for the first's row and then finds it no longer pending.
func (t *Tx) settleExpired(ctx context.Context, query string, args ...any) (ended, givenBack int64, err error) {
	rows, err := t.r.query(ctx, query+` RETURNING registration_id, badge_epoch, badge_raised`, args...)
	if err != nil {
		return 0, 0, err
	}
	type key struct {
		reg   string
		epoch int64
	}
	raised := make(map[key]int64)
	var order []key
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var (
				reg   string
				epoch sql.NullInt64
				r     sql.NullInt64
			)
			if err := rows.Scan(&reg, &epoch, &r); err != nil {
				return err
			}
			ended++
			// A pending batch holds no negative raise: a negative one
			// was settled by this update.
			if r.Int64 >= 0 {
				continue
			}
			k := key{reg, epoch.Int64}
			if _, ok := raised[k]; !ok {
				order = append(order, k)
			}
			raised[k] -= r.Int64
			givenBack++
		}
		return rows.Err()
	}()
	if err != nil {
		return 0, 0, err
	}
	for _, k := range order {
		err := t.later(ctx, "give back badge", `UPDATE push_devices
			SET badge_count = CASE WHEN badge_count > $3 THEN badge_count - $3 ELSE 0 END
			WHERE registration_id = $1 AND badge_epoch = $2 AND badge_count IS NOT NULL`, k.reg, k.epoch, raised[k])
		if err != nil {
			return 0, 0, err
		}
	}
	return ended, givenBack, nil
}

// expireStamped ends batch id as expired with reason at now, when it is
// pending, unleased and at or past its deadline, and gives back its badge
// raise in the same transaction (settleExpired): the end of a batch a claim
// found expired after an attempt stamped it (ClaimBatch). It reports
// whether it ended the batch.
func (s *Store) expireStamped(ctx context.Context, id, reason string, now int64) (bool, error) {
	var ended int64
	err := s.Tx(ctx, func(t *Tx) error {
		var err error
		ended, _, err = t.settleExpired(ctx, expireSettling+`batch_id = $4 AND state = 'pending'
			AND lease_until <= $1 AND expires_at <= $1`, now, EmptyPayload, nullable(reason), id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("expire stamped batch: %w", err)
	}
	return ended == 1, nil
}

// lowerRaise gives back, in t, what batch id raised beyond keep, the
// members it carries from now on, while it is in state: keep 0 for a batch
// a dismissal ended (its raise is then given back whole and settled, as
// settleExpired settles it), the number left for one a dismissal took
// members from. Each member counts once, so a push carries the count of
// the notifications it still brings. Both statements wait for the next
// round trip. The callers hold what keeps two lowerings of one batch apart:
// the host lock on an unleased batch at admission, the lease at a claim;
// a batch a dismissal ends is settled in the transaction that ends it.
func (t *Tx) lowerRaise(ctx context.Context, id string, keep int, state BatchState) error {
	err := t.later(ctx, "give back badge", `UPDATE push_devices SET badge_count = CASE
			WHEN push_devices.badge_count > b.badge_raised - $2 THEN push_devices.badge_count - (b.badge_raised - $2) ELSE 0 END
		FROM push_delivery_batches b
		WHERE b.batch_id = $1 AND b.state = $3 AND b.badge_raised > $2
			AND push_devices.registration_id = b.registration_id AND push_devices.badge_epoch = b.badge_epoch
			AND push_devices.badge_count IS NOT NULL`, id, int64(keep), string(state))
	if err != nil {
		return err
	}
	set := `badge_raised = $2`
	if keep == 0 {
		set = `badge_raised = -badge_raised`
	}
	return t.later(ctx, "give back badge", `UPDATE push_delivery_batches SET `+set+`
		WHERE batch_id = $1 AND state = $3 AND badge_raised > $2`, id, int64(keep), string(state))
}
