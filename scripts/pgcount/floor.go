package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"onorca.dev/push/shared/store"
)

// -mode floor counts the least a one-phone push can cost PostgreSQL with
// today's tables, whatever the code (issue 32): the rows it must write and
// nothing else. A unit is two transactions, each pipelined in one round
// trip as the gateway's are: the first inserts the event, the recipient and
// the batch (already leased, as inline delivery inserts it), the second
// ends the batch as sent and clears its payload. No session is read, no
// check, lock, quota or fence is made, nothing is read back: what the push
// mode counts beyond it is what those cost. The schema is the gateway's
// own (store.Open migrates the database), so every index a push writes is
// written here too.

// floor runs n+1 units through the empty database url.
func floor(ctx context.Context, url string, n int) error {
	s, err := store.Open(ctx, store.Options{DatabaseURL: url, PoolMax: 1})
	if err != nil {
		return fmt.Errorf("open the counted cluster: %w", err)
	}
	s.Close() // migrated
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("open the counted cluster: %w", err)
	}
	defer conn.Close(ctx)
	const now = int64(1_800_000_000_000)
	// A batch's payload as large as one sealed member of -mode push's
	// alert.
	payload := `[{"sealed":"v2.k1:` + strings.Repeat("A", 330) + `","notificationId":"task-1"}]`
	for i := range n + 1 {
		event, batch := fmt.Sprintf("event-%d", i), fmt.Sprintf("batch-%d", i)
		at := now + int64(i)
		admit := &pgx.Batch{}
		admit.Queue(`BEGIN`)
		admit.Queue(`INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
			VALUES ($1, 'host', 'alert', 'fingerprint', $2, $3)`, event, at, at+300_000)
		admit.Queue(`INSERT INTO push_event_recipients (event_id, registration_id, created_at, batch_id, ordinal)
			VALUES ($1, 'phone', $2, $3, 1)`, event, at, batch)
		admit.Queue(`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id, kind,
				payload_json, members, state, due_at, expires_at, scheduled_at, created_at,
				lease_token, lease_until, attempts, held_at)
			VALUES ($1, 'host', 'phone', 'alert', $2, 1, 'pending', $3, $4, $3, $3, 'lease', $5, 1, 0)`,
			batch, payload, at, at+300_000, at+30_000)
		admit.Queue(`COMMIT`)
		if err := conn.SendBatch(ctx, admit).Close(); err != nil {
			return err
		}
		end := &pgx.Batch{}
		end.Queue(`BEGIN`)
		end.Queue(`UPDATE push_delivery_batches SET state = 'sent', payload_json = '', finished_at = $2,
				lease_token = NULL, lease_until = 0
			WHERE batch_id = $1`, batch, at)
		end.Queue(`COMMIT`)
		if err := conn.SendBatch(ctx, end).Close(); err != nil {
			return err
		}
	}
	return nil
}
