package store

import (
	"context"
	"fmt"
)

// Fence is a dismissal's identity within its host: alerts with the same
// epoch and notification id up to Seq are dismissed (reference-behaviour
// §4.4).
type Fence struct {
	Epoch          string
	NotificationID string
	Seq            int64
}

// RaiseFence records the host's dismissal fence f at now, keeping the highest
// sequence ever recorded for its epoch and id, and returns that sequence.
func (t *Tx) RaiseFence(ctx context.Context, host string, f Fence, now int64) (int64, error) {
	s := raiseFenceStmt(host, f, now)
	return scanFence(t.r.queryRow(ctx, s.query, s.args...))
}

// raiseFenceStmt is RaiseFence's statement.
func raiseFenceStmt(host string, f Fence, now int64) statement {
	return statement{op: "raise fence", query: `INSERT INTO push_dismissed_events
		(host_fingerprint, notification_epoch, notification_id, notification_seq, created_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (host_fingerprint, notification_epoch, notification_id) DO UPDATE SET
			notification_seq = CASE WHEN excluded.notification_seq > push_dismissed_events.notification_seq
				THEN excluded.notification_seq ELSE push_dismissed_events.notification_seq END,
			created_at = excluded.created_at
		RETURNING notification_seq`, args: []any{host, f.Epoch, f.NotificationID, f.Seq, now}}
}

// scanFence reads RaiseFence's row.
func scanFence(row scanner) (int64, error) {
	var seq int64
	if err := row.Scan(&seq); err != nil {
		return 0, fmt.Errorf("raise fence: %w", err)
	}
	return seq, nil
}
