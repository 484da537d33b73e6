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
// the raise is made once per push and can be given back
// (Store.GiveBackBadge). It returns the new count, or 0 (changing nothing)
// when the registration has no badge or the batch is not so held. One
// transaction, one round trip on PostgreSQL: the stamp waits and travels
// with the raise and COMMIT.
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

// GiveBackBadge gives back the raise of batch id when it finished without
// reaching a provider (any state but sent: expired, dead, error, dismissed,
// dropped): the registration's count goes down by what the batch's first
// attempt added, never below 0, and only when the badge was not set since
// (PUT badge, a new token: the count is then the phone's). A batch gives
// its raise back once; one that holds none, or is pending or sent, changes
// nothing. Two round trips on PostgreSQL.
//
// The batch is read by its key alone: its raise is tested against a
// parameter (0), not the literal of the owed batches' index
// (push_delivery_batches_badge_owed), so that the planner cannot read
// every owed batch to find it (TestNoPlanReadsATableWhole).
func (s *Store) GiveBackBadge(ctx context.Context, id string) error {
	_, err := s.giveBack(ctx, `batch_id = $1 AND badge_raised > $2 AND state <> 'pending' AND state <> 'sent'`, id, 0)
	if err != nil {
		return fmt.Errorf("give back badge: %w", err)
	}
	return nil
}

// GiveBackBadges gives back, as GiveBackBadge does, the raises of at most
// limit finished batches that did not reach a provider and still hold one,
// and returns how many it gave back: the sweep's, for the batches that end
// without a delivery to give their raise back (an expiry by the sweep, a
// dismissal at admission, a delivery whose give-back failed).
func (s *Store) GiveBackBadges(ctx context.Context, limit int) (int64, error) {
	n, err := s.giveBack(ctx, owedBatches+` AND batch_id IN (SELECT batch_id FROM push_delivery_batches
		WHERE `+owedBatches+` AND finished_at >= 0 LIMIT $1)`, limit)
	if err != nil {
		return n, fmt.Errorf("give back badges: %w", err)
	}
	return n, nil
}

// owedBatches are the finished batches that did not reach a provider and
// still hold a raise: the predicate of their index.
const owedBatches = `badge_raised > 0 AND state <> 'pending' AND state <> 'sent'`

// giveBack gives back the raises of the batches that match which (a
// condition on push_delivery_batches that holds for owed batches only, see
// owedBatches). The batches' raises are negated first, and only those
// this transaction negated are subtracted, so two give-backs of one batch
// at once subtract it once: the second waits for the first's row and then
// finds it settled.
func (s *Store) giveBack(ctx context.Context, which string, args ...any) (int64, error) {
	var n int64
	err := s.Tx(ctx, func(t *Tx) error {
		n = 0
		rows, err := t.r.query(ctx, `UPDATE push_delivery_batches SET badge_raised = -badge_raised
			WHERE `+which+`
			RETURNING registration_id, badge_epoch, -badge_raised`, args...)
		if err != nil {
			return err
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
				var k key
				var r int64
				if err := rows.Scan(&k.reg, &k.epoch, &r); err != nil {
					return err
				}
				if _, ok := raised[k]; !ok {
					order = append(order, k)
				}
				raised[k] += r
				n++
			}
			return rows.Err()
		}()
		if err != nil {
			return err
		}
		for _, k := range order {
			err := t.later(ctx, "give back badge", `UPDATE push_devices
				SET badge_count = CASE WHEN badge_count > $3 THEN badge_count - $3 ELSE 0 END
				WHERE registration_id = $1 AND badge_epoch = $2 AND badge_count IS NOT NULL`, k.reg, k.epoch, raised[k])
			if err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// lowerRaise gives back, in t, what batch id raised beyond keep, the
// members it carries from now on, while it is in state: keep 0 for a batch
// a dismissal ended (its raise is then given back whole and settled, as
// GiveBackBadge settles it), the number left for one a dismissal took
// members from. Each member counts once, so a push carries the count of
// the notifications it still brings. Both statements wait for the next
// round trip. The callers hold what keeps two lowerings of one batch apart:
// the host lock on an unleased batch at admission, the lease at a claim;
// a batch ends owed (GiveBackBadges) only when their transaction commits,
// settled.
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
