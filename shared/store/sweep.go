package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"onorca.dev/push/shared/contract"
)

// ExpireOverdue ends at most limit pending, unleased batches whose deadline
// has passed (expires_at ≤ now) as expired, clearing their payloads, and
// gives back their badge raises in the same transaction (settleExpired);
// it returns how many batches it ended and how many raises it gave back.
//
// It reads them through an index of pending batches: on PostgreSQL the one
// by registration (migration 0014; registration_id IS NOT NULL, true of
// every batch, states that index's condition, migration 0012), whose
// entries hold the due time; on SQLite the one by due time (migration 0009;
// scheduled_at >= 0 is true of every batch too). A pending batch's
// deadline is at most contract.MaxCoalesce before its due time (a join
// lowers it no further than the window allows; a retry or release past it
// ends the batch instead), so a batch past its deadline is due by now +
// MaxCoalesce, which the index's entry tells before the row is read. The
// update states the conditions again for the row it ends: a batch another
// transaction ended or leased meanwhile is left as that one left it, and
// its raise is not given back twice.
func (s *Store) ExpireOverdue(ctx context.Context, now int64, limit int) (expired, givenBack int64, err error) {
	err = s.Tx(ctx, func(t *Tx) error {
		var err error
		expired, givenBack, err = t.settleExpired(ctx, expireSettling+`batch_id IN (SELECT batch_id FROM push_delivery_batches
				WHERE `+sweptPending+` AND scheduled_at >= 0 AND due_at <= $5 AND expires_at <= $1
					AND lease_until <= $1 LIMIT $4)
			AND state = 'pending' AND expires_at <= $1 AND lease_until <= $1`,
			now, EmptyPayload, "deadline", limit, now+contract.MaxCoalesce.Milliseconds())
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("expire overdue: %w", err)
	}
	return expired, givenBack, nil
}

// CutOffSilent ends the gateway's PostgreSQL sessions that have waited more
// than idleInTransaction (5 s) in the middle of a transaction for their
// client's next round trip, and returns how many it ended; on SQLite it
// does nothing.
//
// A pipeline's transaction (pipeline) ends each round trip but its last
// with a Flush, not a Sync: the server sends no ReadyForQuery and so starts
// no idle_in_transaction_session_timeout, and waits for the next message
// as long as the connection lives. A client that goes silent there (its
// process frozen, the network cut without a reset) would hold the
// transaction's locks, a host's lock among them, until TCP gives up on the
// connection, where before the idle timer cut it off in 5 s. Such a session
// is active and waits to read from its client (wait event ClientRead);
// one of the gateway's (the same database, role and application name as
// this session's) that has done so that long is terminated, which rolls
// its transaction back and frees its locks. The sweep calls it every
// minute. Its times are the server's own (now() against state_change, both
// the server's clock): the wait is measured where it happens, not by the
// gateway's clock.
func (s *Store) CutOffSilent(ctx context.Context) (int64, error) {
	return s.cutOffSilent(ctx, idleInTransaction)
}

// cutOffSilent is CutOffSilent for sessions silent for more than silentFor.
func (s *Store) cutOffSilent(ctx context.Context, silentFor time.Duration) (int64, error) {
	if _, pg := s.dialect.(postgresDialect); !pg {
		return 0, nil
	}
	var n int64
	// The sessions are chosen first, in a CTE of their own, so that no
	// plan can call pg_terminate_backend on a session before the
	// conditions that choose it.
	err := s.db.QueryRowContext(ctx, `WITH silent AS MATERIALIZED (
			SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND usename = current_user
				AND application_name = current_setting('application_name') AND pid <> pg_backend_pid()
				AND state = 'active' AND wait_event_type = 'Client' AND wait_event = 'ClientRead'
				AND xact_start IS NOT NULL AND state_change < now() - make_interval(secs => $1))
		SELECT COUNT(*) FROM silent WHERE pg_terminate_backend(pid)`, silentFor.Seconds()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("cut off silent sessions: %w", err)
	}
	return n, nil
}

// sweptPending is the pending batches the sweep reads, in the words of the
// PostgreSQL index it reads them by (the index by registration, migrations
// 0012 and 0014): registration_id IS NOT NULL holds for every batch, but a
// statement that does not say it cannot use that index and reads the table
// (TestNoPlanReadsATableWhole).
const sweptPending = `state = 'pending' AND registration_id IS NOT NULL`

// LostBatches returns at most limit pending batches that are due by
// now − grace, unleased, and were last handed to the scheduler before
// now − grace, and marks them scheduled at now: their task may be lost (a
// failed CreateTask, a crash between commit and schedule), so the caller
// schedules them again after this returns. It reads them through an index
// of pending batches as ExpireOverdue does.
func (s *Store) LostBatches(ctx context.Context, now, grace int64, limit int) ([]LostBatch, error) {
	rows, err := s.db.QueryContext(ctx, `UPDATE push_delivery_batches SET scheduled_at = $1
		WHERE batch_id IN (SELECT batch_id FROM push_delivery_batches
			WHERE `+sweptPending+` AND due_at <= $2 AND lease_until <= $1
				AND scheduled_at <= $2 AND expires_at > $1
			ORDER BY due_at LIMIT $3)
		RETURNING batch_id, registration_id`, now, now-grace, limit)
	if err != nil {
		return nil, fmt.Errorf("lost batches: %w", err)
	}
	defer rows.Close()
	var lost []LostBatch
	for rows.Next() {
		var b LostBatch
		if err := rows.Scan(&b.ID, &b.RegistrationID); err != nil {
			return nil, fmt.Errorf("lost batches: %w", err)
		}
		lost = append(lost, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lost batches: %w", err)
	}
	return lost, nil
}

// LostBatch is a batch [Store.LostBatches] took for lost: its id and its
// registration, which picks its queue.
type LostBatch struct {
	ID, RegistrationID string
}

// PruneChallenges deletes at most limit challenges that expired before
// before, and returns how many it deleted; a caller repeats while it
// returned limit.
func (s *Store) PruneChallenges(ctx context.Context, before int64, limit int) (int64, error) {
	return s.execN(ctx, "prune push_challenges", `DELETE FROM push_challenges WHERE challenge_id IN
		(SELECT challenge_id FROM push_challenges WHERE expires_at < $1 LIMIT $2)`, before, limit)
}

// Prune deletes, in one chunk of at most limit rows per table, what the
// retention rules let go at now (reference-behaviour §3 and §6, "Cleanup"):
// expired sessions, hosts without contact for
// hostRetention that no device names, events older than retention with
// their recipients (pruneEvents), fences older than retention and batches
// finished longer than retention ago (by their key, batchKeyAt). It
// returns the rows deleted per
// table; a caller repeats while any table returned limit. A table whose
// statement fails is left out of the map and its error joined to the
// others', the other tables pruned all the same.
func (s *Store) Prune(ctx context.Context, now, hostRetention, retention int64, limit int) (map[string]int64, error) {
	steps := []struct {
		table, query string
		args         []any
	}{
		{"push_sessions", `DELETE FROM push_sessions WHERE token_hash IN
			(SELECT token_hash FROM push_sessions WHERE expires_at < $1 LIMIT $2)`,
			[]any{now, limit}},
		{"push_hosts", `DELETE FROM push_hosts WHERE host_fingerprint IN
			(SELECT h.host_fingerprint FROM push_hosts h WHERE h.last_seen_at < $1
				AND NOT EXISTS (SELECT 1 FROM push_devices d WHERE d.host_fingerprint = h.host_fingerprint) LIMIT $2)`,
			[]any{now - hostRetention, limit}},
		{"push_dismissed_events", `DELETE FROM push_dismissed_events
			WHERE (host_fingerprint, notification_epoch, notification_id) IN
			(SELECT host_fingerprint, notification_epoch, notification_id FROM push_dismissed_events
				WHERE created_at < $1 LIMIT $2)`,
			[]any{now - retention, limit}},
		{"push_delivery_batches", `DELETE FROM push_delivery_batches WHERE batch_id IN
			(SELECT batch_id FROM push_delivery_batches
				WHERE batch_id < $3 AND state <> 'pending' AND finished_at < $1
			UNION ALL
			SELECT batch_id FROM push_delivery_batches
				WHERE batch_id >= $4 AND state <> 'pending' AND finished_at < $1
			LIMIT $2)`,
			[]any{now - retention, limit, batchKeyAt(now - retention), batchKeyAt(now + retention)}},
	}
	out := make(map[string]int64, len(steps)+2)
	var errs []error
	if events, recipients, err := s.pruneEvents(ctx, now-retention, limit); err != nil {
		errs = append(errs, err)
	} else {
		out["push_events"], out["push_event_recipients"] = events, recipients
	}
	for _, st := range steps {
		// A table that fails does not keep the others from their pruning.
		n, err := s.execN(ctx, "prune "+st.table, st.query, st.args...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[st.table] = n
	}
	return out, errors.Join(errs...)
}

// batchKeyAt is the text every batch key made at ms or later (a UUID of
// version 7, NewBatchID) sorts after, and every one made before it sorts
// before: the key's first twelve hex digits are its time in milliseconds.
//
// The prune reads the finished batches by their key (migration 0016): a
// batch finished before the retention's cutoff was made before it, so its
// key is before batchKeyAt(cutoff); the finished_at condition decides, the
// key's range only bounds the read, so that a key whose time is off (a
// clock behind) is pruned late, never early. Keys after
// batchKeyAt(now + retention) are read too: random ones (batches stored
// before version 7 keys, nearly all of whose keys sort there; the others
// sort before the cutoff or, within two days, will) and those of a clock a
// day ahead.
func batchKeyAt(ms int64) string {
	t := uint64(max(ms, 0))
	return fmt.Sprintf("%08x-%04x", t>>16&0xffffffff, t&0xffff)
}

// pruneEvents deletes at most limit events created before before, with
// their recipients, in one transaction, and returns how many of each it
// deleted. A recipient goes with its event, not by its own time (migration
// 0011): a receipt reads it through its event (Store.Receipts). One
// recorded after its event, by a send that repeated the event's id while
// the event lived, so goes at most the event's lifetime before its own
// retention would have let it go.
//
// PostgreSQL deletes both in one statement: a recipient goes in the
// statement that deletes its event, whatever runs beside it. SQLite has no
// DELETE in a WITH; its transaction, the only writer from its first write,
// deletes the recipients of the events the second statement then deletes,
// both chosen in one order.
func (s *Store) pruneEvents(ctx context.Context, before int64, limit int) (events, recipients int64, err error) {
	if _, pg := s.dialect.(postgresDialect); pg {
		err := s.db.QueryRowContext(ctx, `WITH events AS (
				DELETE FROM push_events WHERE event_id IN
					(SELECT event_id FROM push_events WHERE created_at < $1 LIMIT $2)
				RETURNING event_id),
			recipients AS (
				DELETE FROM push_event_recipients WHERE event_id IN (SELECT event_id FROM events)
				RETURNING 1)
			SELECT (SELECT COUNT(*) FROM events), (SELECT COUNT(*) FROM recipients)`,
			before, limit).Scan(&events, &recipients)
		if err != nil {
			return 0, 0, fmt.Errorf("prune push_events: %w", err)
		}
		return events, recipients, nil
	}
	const oldest = `SELECT event_id FROM push_events WHERE created_at < $1 ORDER BY created_at, event_id LIMIT $2`
	err = s.Tx(ctx, func(tx *Tx) error {
		var err error
		if recipients, err = tx.exec(ctx, `DELETE FROM push_event_recipients WHERE event_id IN (`+oldest+`)`,
			before, limit); err != nil {
			return err
		}
		events, err = tx.exec(ctx, `DELETE FROM push_events WHERE event_id IN (`+oldest+`)`, before, limit)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("prune push_events: %w", err)
	}
	return events, recipients, nil
}

func (s *Store) execN(ctx context.Context, op, query string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}
