package store

import (
	"context"
	"fmt"
)

// ReleaseBatch gives up the lease token holds on batch id of registration
// registrationID as if the claim had not been made: a delivery whose key
// ring lacks the key the batch was sealed with (a rotation rolling out)
// leaves it for an instance that holds it. The batch is due again at dueAt
// and marked scheduled at now (the caller schedules it after commit); the
// attempt the claim counted is taken back and its reason and attempt time
// are left as they were, so backoff, receipts and the retry counter see no
// provider attempt. In the same transaction it returns the registration's
// other due batches, which the lease held back, marking them scheduled at
// now. A stale holder changes nothing and gets nothing (false).
func (s *Store) ReleaseBatch(ctx context.Context, id, registrationID, token string, dueAt, now int64) (bool, []string, error) {
	var (
		released bool
		next     []string
	)
	err := s.Tx(ctx, func(t *Tx) error {
		released, next = false, nil
		n, err := t.exec(ctx, `UPDATE push_delivery_batches
			SET lease_token = NULL, lease_until = 0, attempts = attempts - 1, due_at = $3, scheduled_at = $4,
				held_at = 0
			WHERE batch_id = $1 AND state = 'pending' AND lease_token = $2`, id, token, dueAt, now)
		if released = n == 1; err != nil || !released {
			return err
		}
		next, err = t.DueBatches(ctx, registrationID, now)
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("release batch: %w", err)
	}
	return released, next, nil
}
