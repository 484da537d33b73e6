package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// A registration has one delivery in flight at a time (ClaimBatch): a claim
// of another of its due batches is held back, and marks it so (holdBack).
// When the holder's batch ends (EndLeasedBatch) or goes back for a retry
// (RetryLeasedBatch), the same statement takes the batches held back,
// oldest due first, and the holder claims the first of them and delivers it
// in the same request (the hand-on, package delivery): a burst to one phone
// goes out one batch after the other without a task per batch or a wake-up
// per sibling. A due batch no claim has asked for yet is left to its own
// task, which claims it when it comes.
//
// Both run under the batch's host lock on PostgreSQL, as a claim does, so a
// claim of a sibling and the end of the holder never miss each other: the
// claim either sees the lease ended and takes it, or finds it held and
// leaves the batch to the holder's end, which then sees the sibling. (Without
// the lock, a sibling admitted while the end's statement ran could be held
// back by a lease the end had already released, with no one left to hand it
// on until the sweep.) On SQLite every write is serialised already.

// EndLeasedBatch ends batch id of host's registration registrationID,
// leased to token, in state with reason, clearing its payload; and in the same
// statement it finds the registration's other batches that a claim found
// held back (holdBack) and that are pending, due, unleased and unexpired at
// now, marks them scheduled at now (on PostgreSQL only with MarkHeldBack),
// and returns their ids, oldest due first: the caller claims the first (the hand-on), or
// hands it to the scheduler, so a batch held back by this lease goes out as
// soon as the lease ends. It reports whether it ended the batch. A stale
// holder, whose lease ran out and was taken over, changes nothing and
// returns nothing: the new holder records the outcome and hands on. The
// lease token fences it, and on PostgreSQL it runs under the host's lock
// (see above; the caller names the host, read with the batch, which spares
// the lock statement reading the batch's row) in one round trip (the lock
// and the statement, committed with the round trip:
// pipeline.beginImplicitly). A batch that ends in any state but sent gives
// its badge raise back in the same transaction and round trip
// (giveBackLeased), before the hand-on's claim of the next batch reads the
// count; under load, outcomes that arrive together share one transaction
// and round trip (group commit, see SharedHostTx). On SQLite it is one
// statement.
//
// On PostgreSQL, held says whether the statement marks the held-back
// batches scheduled at now or only reads them (HeldBack).
func (s *Store) EndLeasedBatch(ctx context.Context, id, host, registrationID, token string, state BatchState, reason string, now int64, held HeldBack) (bool, []string, error) {
	var (
		ended bool
		woken []string
	)
	fn := func(t *Tx) error {
		if state != BatchSent {
			if err := t.giveBackLeased(ctx, id, registrationID, token); err != nil {
				return err
			}
		}
		var err error
		ended, woken, err = t.endLeasedBatch(ctx, id, registrationID, token, state, reason, now, held)
		return err
	}
	var err error
	switch {
	case s.outcomes == nil && state == BatchSent:
		err = fn(&Tx{r: sqlRunner{tx: s.db}})
	case s.outcomes == nil:
		err = s.Tx(ctx, fn) // the give-back and the end together
	default:
		alone := func(wait string) error { return s.transact(ctx, lockOn{host: host, wait: wait}, fn) }
		err = s.outcomes.do(&groupCall{ctx: ctx, on: lockOn{host: host}, fn: fn, alone: alone})
	}
	return ended, woken, err
}

// endLeasedStatement is EndLeasedBatch's update on SQLite, which has no
// UPDATE in a WITH: the holder's row matches the first branch, its
// siblings the second. The holder test accepts the holder's row still
// leased to token or just ended by this very statement, whichever the
// sibling rows see.
const endLeasedStatement = `UPDATE push_delivery_batches SET
			state = CASE WHEN batch_id = $1 THEN $4 ELSE state END,
			reason = CASE WHEN batch_id = $1 THEN $5 ELSE reason END,
			payload_json = CASE WHEN batch_id = $1 THEN $6 ELSE payload_json END,
			finished_at = CASE WHEN batch_id = $1 THEN $7 ELSE finished_at END,
			lease_token = CASE WHEN batch_id = $1 THEN NULL ELSE lease_token END,
			lease_until = CASE WHEN batch_id = $1 THEN 0 ELSE lease_until END,
			scheduled_at = CASE WHEN batch_id = $1 THEN scheduled_at ELSE $7 END
		WHERE (batch_id = $1 AND state = 'pending' AND lease_token = $3)
			OR (registration_id = $2 AND batch_id <> $1 AND state = 'pending' AND due_at <= $7
				AND lease_until <= $7 AND expires_at > $7 AND held_at > 0
				AND EXISTS (SELECT 1 FROM push_delivery_batches h WHERE h.batch_id = $1
					AND ((h.state = 'pending' AND h.lease_token = $3)
						OR (h.state = $4 AND h.finished_at = $7 AND h.lease_token IS NULL))))
		RETURNING batch_id, due_at, created_at`

// HeldBack is how [Store.EndLeasedBatch] finds, on PostgreSQL, the
// batches its lease held back. Either way it returns the same batches; the
// choice is what the end costs, and whether they are marked scheduled at
// now. An UPDATE that marks them costs an end about 63,000 of PostgreSQL's
// instructions whether it finds a batch or not (the executor starts it:
// scripts/pgcount -mode push -split, the outcome's statement 252,000
// against 189,000 without it), a read of them about 35,000. Most batches
// end with nothing held back; a batch that was itself handed on to is in a
// burst to its phone, whose next batches most often wait already and whose
// mark keeps the sweep from taking them for lost while the burst goes out
// (Store.LostBatches: a held-back batch's mark is otherwise its admission
// or its last task).
type HeldBack uint8

const (
	// ReadHeldBack reads them: for a batch claimed on its own (its task,
	// an inline delivery). The hand-on's next end marks those still
	// waiting.
	ReadHeldBack HeldBack = iota
	// MarkHeldBack marks them scheduled at now as it reads them: for a
	// batch handed on to by the end of the lease before it.
	MarkHeldBack
)

// endLeasedPostgres is EndLeasedBatch's statement on PostgreSQL with
// MarkHeldBack: the holder's update by its key (h), and its siblings' by
// their registration (s), made only when h ended the holder, both on the
// snapshot the statement began with; it returns whether h did and the
// siblings' ids, oldest due first. endLeasedStatement's one update with an
// OR of the two can only be planned as a bitmap of both indexes, or, before
// migration 0012, as a read of every pending batch, which a generic plan
// made while few were pending chose (TestNoPlanReadsATableWhole); the
// bitmap cost a push 35,000 instructions more than the two updates
// (scripts/pgcount -mode push).
const endLeasedPostgres = endHolder + `,
		s AS (
			UPDATE push_delivery_batches SET scheduled_at = $7
			WHERE ` + heldBehind + ` AND EXISTS (SELECT 1 FROM h)
			RETURNING batch_id, due_at, created_at)
		SELECT EXISTS (SELECT 1 FROM h), ARRAY(SELECT batch_id FROM s ORDER BY due_at, created_at, batch_id)`

// endHolder is the holder's update that both of EndLeasedBatch's
// statements on PostgreSQL begin with (h): $1 the batch, $3 its lease's
// token, $4 to $7 its state, reason, payload and end time.
const endHolder = `WITH h AS (
			UPDATE push_delivery_batches SET state = $4, reason = $5, payload_json = $6, finished_at = $7,
				lease_token = NULL, lease_until = 0
			WHERE batch_id = $1 AND state = 'pending' AND lease_token = $3
			RETURNING batch_id)`

// heldBehind is the condition of the batches held back behind the lease
// ending ($1) of registration $2 at $7: pending, due, unleased, unexpired
// and asked for by a claim (holdBack).
const heldBehind = `registration_id = $2 AND state = 'pending' AND due_at <= $7 AND lease_until <= $7
				AND expires_at > $7 AND held_at > 0 AND batch_id <> $1`

// endReadPostgres is EndLeasedBatch's statement on PostgreSQL with
// ReadHeldBack: the holder's update (h), and s's batches read, not marked,
// on the snapshot the statement began with; the caller reads them only when
// h ended the holder. They are ordered by due time alone, the pending
// index's order, so that no sort is started (9,000 instructions an end,
// scripts/pgcount -mode push: 931,700 against 922,254). Batches due in the
// same millisecond come in the index's order rather than by creation and
// id: a batch due at once is due at its admission, so two such batches were
// created in the same millisecond too and the id decided before (random
// then, made in the order of admission now: NewBatchID);
// only coalesced batches of one phone that a deadline made due in the same
// millisecond may come in another order than before.
const endReadPostgres = endHolder + `
		SELECT EXISTS (SELECT 1 FROM h), ARRAY(SELECT batch_id FROM push_delivery_batches
			WHERE ` + heldBehind + `
			ORDER BY due_at)`

// endLeasedBatch is EndLeasedBatch's statement, run by t: on PostgreSQL
// as the transaction's final statement, so that the commit travels with it.
func (t *Tx) endLeasedBatch(ctx context.Context, id, registrationID, token string, state BatchState, reason string, now int64, held HeldBack) (bool, []string, error) {
	args := []any{id, registrationID, token, string(state), nullable(reason), EmptyPayload, now}
	if t.pipelined() {
		query := endLeasedPostgres
		if held == ReadHeldBack {
			query = endReadPostgres
		}
		var (
			ended bool
			ids   []string
		)
		if err := t.r.final(ctx, query, args...).Scan(&ended, &ids); err != nil {
			return false, nil, fmt.Errorf("end leased batch: %w", err)
		}
		if !ended { // a stale holder
			return false, nil, nil
		}
		return true, ids, nil
	}
	rows, err := t.r.query(ctx, endLeasedStatement, args...)
	if err != nil {
		return false, nil, fmt.Errorf("end leased batch: %w", err)
	}
	ids, err := scanDue(rows)
	if err != nil {
		return false, nil, fmt.Errorf("end leased batch: %w", err)
	}
	if !slices.Contains(ids, id) {
		// The holder was not ended: a sibling matched only because
		// another holder ended the batch in the same state and
		// millisecond. Report nothing.
		return false, nil, nil
	}
	return true, slices.DeleteFunc(ids, func(b string) bool { return b == id }), nil
}

// holdBack marks batch id asked for at now when it is pending, due, unleased
// and unexpired: the claim that follows in the transaction either leases it
// (the mark is then moot: the batch ends, or its retry clears it) or finds
// another batch of the registration in flight and leaves it to that lease's
// holder, whose end takes it. The mark does not test that other lease
// itself: in a group of claims (SharedHostTx) a member's deferred write may
// run before the claims of the members ahead of it, and a batch held back
// by one of those must be marked all the same. It waits for the claim's
// round trip.
func (t *Tx) holdBack(ctx context.Context, id string, now int64) error {
	return t.later(ctx, "hold back", `UPDATE push_delivery_batches SET held_at = $2
		WHERE batch_id = $1 AND state = 'pending' AND lease_until <= $2 AND due_at <= $2 AND expires_at > $2`, id, now)
}

// giveBackLeased gives back, in t, the badge raise of batch id of
// registration registrationID while it is still leased to token, as
// GiveBackBadge does for a finished batch: the registration's count goes
// down by what the batch's first attempt added,
// never below 0, only in the epoch it was made in, and the raise is settled
// (negated) so that it is given back once. The end statement that follows
// in the transaction ends the batch unsent; a stale holder gives nothing
// back. Both statements wait for that statement's round trip. The
// registration is a parameter, not the join of the device with the batch:
// joined, a plan made while few batches were pending could read every
// pending batch to find the one (TestNoPlanReadsATableWhole saw it before
// migration 0012).
func (t *Tx) giveBackLeased(ctx context.Context, id, registrationID, token string) error {
	err := t.later(ctx, "give back badge", `UPDATE push_devices SET badge_count = CASE
			WHEN push_devices.badge_count > b.badge_raised THEN push_devices.badge_count - b.badge_raised ELSE 0 END
		FROM push_delivery_batches b
		WHERE b.batch_id = $1 AND b.state = 'pending' AND b.lease_token = $2 AND b.badge_raised > 0
			AND b.registration_id = $3 AND push_devices.registration_id = $3
			AND push_devices.badge_epoch = b.badge_epoch AND push_devices.badge_count IS NOT NULL`, id, token, registrationID)
	if err != nil {
		return err
	}
	return t.later(ctx, "give back badge", `UPDATE push_delivery_batches SET badge_raised = -badge_raised
		WHERE batch_id = $1 AND state = 'pending' AND lease_token = $2 AND badge_raised > 0`, id, token)
}

// RetryLeasedBatch returns batch id of registration registrationID, leased
// to token, to pending for its next attempt at dueAt (Tx.RetryBatch), and
// in the same transaction takes the registration's batches the lease held
// back that are due, marking them scheduled at now, oldest due first: the
// caller hands on to the first. It runs under the batch's host lock (see above). A stale
// holder changes nothing and gets nothing (false).
func (s *Store) RetryLeasedBatch(ctx context.Context, id, registrationID, token, reason string, dueAt, now int64) (bool, []string, error) {
	var (
		retried bool
		next    []string
	)
	err := s.transact(ctx, lockOn{batch: id}, func(t *Tx) error {
		var err error
		next = nil
		if retried, err = t.RetryBatch(ctx, id, token, reason, dueAt, now); err != nil || !retried {
			return err
		}
		rows, err := t.r.query(ctx, `UPDATE push_delivery_batches SET scheduled_at = $2
			WHERE registration_id = $1 AND state = 'pending' AND due_at <= $2 AND lease_until <= $2
				AND expires_at > $2 AND held_at > 0
			RETURNING batch_id, due_at, created_at`, registrationID, now)
		if err != nil {
			return err
		}
		next, err = scanDue(rows)
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("retry leased batch: %w", err)
	}
	return retried, next, nil
}

// scanDue reads rows of batch id, due time and creation time and returns
// the ids, oldest due first (then oldest created, then by id): the order a
// registration's batches go out in.
func scanDue(rows rowSet) ([]string, error) {
	defer rows.Close()
	type due struct {
		id           string
		dueAt, since int64
	}
	var ds []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.dueAt, &d.since); err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(ds, func(a, b due) int {
		return cmp.Or(cmp.Compare(a.dueAt, b.dueAt), cmp.Compare(a.since, b.since), cmp.Compare(a.id, b.id))
	})
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.id
	}
	return ids, nil
}
