package store

import (
	"context"
	"fmt"
)

// Tables lists every table of the gateway's schema.
var Tables = []string{
	"push_hosts", "push_challenges", "push_sessions", "push_devices", "push_events",
	"push_event_recipients", "push_dismissed_events", "push_delivery_batches",
}

// RowCounts returns the number of rows of every table in Tables. Tests use it
// to prove that a refused request changed nothing.
func (s *Store) RowCounts(ctx context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(Tables))
	for _, t := range Tables {
		var n int64
		// t comes from the constant list above, never from a caller.
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}

// BatchStates returns how many delivery batches are in each state. Tests use
// it to prove that nothing waits or was lost; the emulator shows it.
func (s *Store) BatchStates(ctx context.Context) (map[BatchState]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, COUNT(*) FROM push_delivery_batches GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("batch states: %w", err)
	}
	defer rows.Close()
	out := make(map[BatchState]int64)
	for rows.Next() {
		var st BatchState
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("batch states: %w", err)
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("batch states: %w", err)
	}
	return out, nil
}

// RegistrationBatches returns the batches of a registration, oldest first.
// Tests use it to read what admission stored.
func (s *Store) RegistrationBatches(ctx context.Context, registrationID string) ([]Batch, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT batch_id FROM push_delivery_batches
		WHERE registration_id = $1 ORDER BY created_at, batch_id`, registrationID)
	if err != nil {
		return nil, fmt.Errorf("registration batches: %w", err)
	}
	ids, err := scanIDs(sqlRows{rows})
	if err != nil {
		return nil, fmt.Errorf("registration batches: %w", err)
	}
	out := make([]Batch, 0, len(ids))
	for _, id := range ids {
		b, err := s.Batch(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
