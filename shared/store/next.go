package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// A registration has one delivery in flight at a time (ClaimBatch): a claim
// of another of its due batches is held back, and marks it so (held_at,
// the time it was held back). When the holder's batch ends
// (EndLeasedBatch) or goes back for a retry (RetryLeasedBatch), the
// batches held back are taken, oldest due first, and the holder claims the
// first of them and delivers it in the same request (the hand-on, package
// delivery): a burst to one phone goes out one batch after the other
// without a task per batch or a wake-up per sibling. A due batch no claim
// has asked for yet is left to its own task, which claims it when it comes.
//
// Leases are granted only under the batch's host lock on PostgreSQL (a
// claim, an admission that leases the batch it opens), so two never both
// find the other not yet in flight. A lease given up needs no lock: the
// end of a batch (EndLeasedBatch) and a release (ReleaseBatch) meet the
// hold-backs at the holder's row instead. The statement that holds a batch
// back updates the holder's row too (heldMark: its held_at becomes the
// negated time, "holding"), and the end updates that row, so one of the
// two waits for the other's transaction: a hold-back that comes second
// rechecks the row, finds the lease ended, and takes the lease itself; an
// end that comes second finds the mark in its update's result and reads
// the batches held back after its commit, when it sees them (endHolder).
// A holder's own held_at, when it was itself held back before its lease,
// is negated as the lease is taken: the batches held back with it wait now
// behind it. The retry (RetryLeasedBatch) still runs under the host lock
// and takes the held batches in its transaction. On SQLite every write is
// serialised already: its end reads the held batches in its statement.

// EndLeasedBatch ends batch id of host's registration registrationID,
// leased to token, in state with reason, clearing its payload, and returns
// the registration's other batches that a claim or an admission held back
// behind it (see above) and that are pending, due, unleased and unexpired
// at now, oldest due first: the caller claims the first (the hand-on), or
// hands it to the scheduler, so a batch held back by this lease goes out as
// soon as the lease ends. With MarkHeldBack it marks them scheduled at now
// (on PostgreSQL only). It reports whether it ended the batch. A stale
// holder, whose lease ran out and was taken over, changes nothing and
// returns nothing: the new holder records the outcome and hands on. The
// lease token fences it.
//
// On PostgreSQL the end is one statement by the batch's key, in one round
// trip that commits it (pipeline), without the host lock
// (see above); only when its row was marked as holding does a second
// statement, after the commit, read the batches held back (or mark them);
// should that statement fail, the error is returned with the batch ended,
// and the batches held back are the sweep's, as when the process that was
// to hand on to them dies.
// A batch that ends in any state but sent gives its badge raise back in
// the same transaction and round trip (giveBackLeased), under the host
// lock, ordered with the admissions that raise the count, before the
// hand-on's claim of the next batch reads it. Under load, outcomes that
// arrive together share one transaction and round trip (group commit, see
// SharedHostTx). On SQLite it is one statement.
func (s *Store) EndLeasedBatch(ctx context.Context, id, host, registrationID, token string, state BatchState, reason string, now int64, held HeldBack) (bool, []string, error) {
	var (
		ended, holding bool
		woken          []string
	)
	fn := func(t *Tx) error {
		if state != BatchSent {
			if err := t.giveBackLeased(ctx, id, registrationID, token); err != nil {
				return err
			}
		}
		var err error
		ended, holding, woken, err = t.endLeasedBatch(ctx, id, registrationID, token, state, reason, now)
		return err
	}
	// A batch sent ends without the host lock on PostgreSQL (endHolder);
	// one that gives its badge raise back keeps it, ordered with the
	// admissions that raise the count.
	on := lockOn{}
	if state != BatchSent {
		on.host = host
	}
	var err error
	switch {
	case s.outcomes == nil && state == BatchSent:
		err = fn(&Tx{r: sqlRunner{tx: s.db}})
	case s.outcomes == nil:
		err = s.Tx(ctx, fn) // the give-back and the end together
	default:
		alone := func(wait string) error { on := on; on.wait = wait; return s.transact(ctx, on, fn) }
		err = s.outcomes.do(&groupCall{ctx: ctx, on: on, fn: fn, alone: alone})
	}
	if err == nil && holding {
		woken, err = s.heldBehindEnded(ctx, id, registrationID, now, held)
	}
	if err != nil {
		return false, nil, err
	}
	return ended, woken, nil
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

// HeldBack is how [Store.EndLeasedBatch] takes, on PostgreSQL, the
// batches its lease held back: it reads them, or marks them scheduled at
// now as it reads them. Either way it returns the same batches; the choice
// is whether they are marked. Most batches end with nothing held back: the
// end then reads nothing (the holder's mark, see endHolder). A batch that
// was itself handed on to is in a burst to its phone, whose next batches
// most often wait already and whose mark keeps the sweep from taking them
// for lost while the burst goes out (Store.LostBatches: a held-back
// batch's mark is otherwise its admission or its last task).
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

// endHolder is EndLeasedBatch's statement on PostgreSQL: the holder's
// update by its key, $1 the batch, $2 its lease's token, $3 to $6 its
// state, reason, payload and end time. It returns whether the row was
// marked as holding (a negative held_at, heldMark) when it ended the
// batch, and no row for a stale holder.
//
// It takes no host lock and reads none of the registration's other
// batches: a claim or an admission that holds a batch back behind this
// lease marks the holder's row in the statement that decides it, under the
// host lock, and the row orders the two. When the mark's update comes
// first, the end's update waits for its transaction, which holds the batch
// back, to commit, and then returns the mark: the batches held back are
// read after the end's commit (heldBehindEnded), by a statement whose
// snapshot sees them. When the end's update comes first, the mark's update
// waits for it, rechecks the row (PostgreSQL's EvalPlanQual: the batch is
// no longer pending) and marks nothing, and the claim or admission,
// finding no lease in flight, takes the lease itself
// (TestEndMeetsClaimAtTheHolder, TestEndMeetsAdmissionAtTheHolder). The
// host lock and the read of the held batches in the end's statement cost a
// push 58,000 of PostgreSQL's instructions net of the admission's mark
// (scripts/pgcount -mode push: 879,992 -> 821,921; -split: the lock
// 21,300, the end's statement 206,985 -> 155,705, the send's 475,788 ->
// 488,864).
const endHolder = `UPDATE push_delivery_batches SET state = $3, reason = $4, payload_json = $5, finished_at = $6,
			lease_token = NULL, lease_until = 0
		WHERE batch_id = $1 AND state = 'pending' AND lease_token = $2
		RETURNING held_at < 0`

// heldMark is the update a claim or an admission makes of a registration's
// batch in flight when it may hold another batch back behind it
// (endHolder): it marks the holder, its held_at the negated time now ($2),
// and returns its lease's end. The registration follows it: a claim's
// subquery, an admission's array.
const heldMark = `UPDATE push_delivery_batches o SET held_at = -$2
			WHERE o.state = 'pending' AND o.lease_until > $2 AND o.registration_id `

// heldBehind is the condition of the batches held back behind the lease
// of batch $1 of registration $2 ended at $3: pending, due, unleased,
// unexpired and held back (a positive held_at: a holder's is negative).
const heldBehind = `registration_id = $2 AND state = 'pending' AND due_at <= $3 AND lease_until <= $3
				AND expires_at > $3 AND held_at > 0 AND batch_id <> $1`

// readHeld reads the batches held back (ReadHeldBack), ordered by
// due time alone, the pending index's order, so that no sort is started
// (9,000 instructions, scripts/pgcount -mode push). Batches due in the same
// millisecond come in the index's order rather than by creation and id: a
// batch due at once is due at its admission, so two such batches were
// created in the same millisecond too and the id decided before (made in
// the order of admission: NewBatchID); only coalesced batches of one phone
// that a deadline made due in the same millisecond may come in another
// order.
const readHeld = `SELECT batch_id FROM push_delivery_batches WHERE ` + heldBehind + ` ORDER BY due_at`

// markHeld marks them scheduled at the end's time (MarkHeldBack), and
// returns them: also the retry's (RetryLeasedBatch), on both databases,
// after which the retried batch is unleased but not held back.
const markHeld = `UPDATE push_delivery_batches SET scheduled_at = $3 WHERE ` + heldBehind + `
		RETURNING batch_id, due_at, created_at`

// endLeasedBatch is EndLeasedBatch's statement, run by t: on PostgreSQL
// as the transaction's final statement, so that the commit travels with
// it. It reports whether it ended the batch, and on PostgreSQL whether the
// batch was marked as holding others back (endHolder), on SQLite the
// batches held back.
func (t *Tx) endLeasedBatch(ctx context.Context, id, registrationID, token string, state BatchState, reason string, now int64) (ended, holding bool, ids []string, err error) {
	if t.pipelined() {
		err := t.r.final(ctx, endHolder, id, token, string(state), nullable(reason), EmptyPayload, now).Scan(&holding)
		switch {
		case errors.Is(err, sql.ErrNoRows): // a stale holder
			return false, false, nil, nil
		case err != nil:
			return false, false, nil, fmt.Errorf("end leased batch: %w", err)
		}
		return true, holding, nil, nil
	}
	rows, err := t.r.query(ctx, endLeasedStatement, id, registrationID, token, string(state), nullable(reason), EmptyPayload, now)
	if err != nil {
		return false, false, nil, fmt.Errorf("end leased batch: %w", err)
	}
	ids, err = scanDue(rows)
	if err != nil {
		return false, false, nil, fmt.Errorf("end leased batch: %w", err)
	}
	if !slices.Contains(ids, id) {
		// The holder was not ended: a sibling matched only because
		// another holder ended the batch in the same state and
		// millisecond. Report nothing.
		return false, false, nil, nil
	}
	return true, false, slices.DeleteFunc(ids, func(b string) bool { return b == id }), nil
}

// heldBehindEnded returns, on PostgreSQL, the batches held back behind
// batch id of registration registrationID, which ended at now marked as
// holding (endHolder), oldest due first; with MarkHeldBack it marks them
// scheduled at now. It runs after the end committed, so its snapshot sees
// every hold-back that marked the holder.
func (s *Store) heldBehindEnded(ctx context.Context, id, registrationID string, now int64, held HeldBack) ([]string, error) {
	query, scan := readHeld, scanIDs
	if held == MarkHeldBack {
		query, scan = markHeld, scanDue
	}
	rows, err := s.db.QueryContext(ctx, query, id, registrationID, now)
	if err != nil {
		return nil, fmt.Errorf("held back: %w", err)
	}
	ids, err := scan(sqlRows{rows})
	if err != nil {
		return nil, fmt.Errorf("held back: %w", err)
	}
	return ids, nil
}

// holdBack marks batch id asked for at now when it is pending, due, unleased
// and unexpired: the claim that follows in the transaction either leases it
// (the mark is then moot: the batch ends, or its retry clears it) or finds
// another batch of the registration in flight and leaves it to that lease's
// holder, whose end takes it. SQLite's claim makes it; PostgreSQL's marks
// the batch in its own statement, and only when it holds it back
// (postgresClaim). The mark does not test that other lease itself: in a
// group of claims a member's deferred write may run before the claims of
// the members ahead of it, and a batch held back by one of those must be
// marked all the same. It waits for the claim's round trip.
func (t *Tx) holdBack(ctx context.Context, id string, now int64) error {
	return t.later(ctx, "hold back", `UPDATE push_delivery_batches SET held_at = $2
		WHERE batch_id = $1 AND state = 'pending' AND lease_until <= $2 AND due_at <= $2 AND expires_at > $2`, id, now)
}

// giveBackLeased gives back, in t, the badge raise of batch id of
// registration registrationID while it is still leased to token, as
// settleExpired does for an expired one: the registration's count goes
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
		rows, err := t.r.query(ctx, markHeld, id, registrationID, now)
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
