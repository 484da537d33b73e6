package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"onorca.dev/push/shared/contract"
)

// BatchState is a delivery batch's state (reference-behaviour §8.2).
type BatchState string

// The batch states admission writes; delivery adds the finished ones.
const (
	// BatchPending waits for its due time or a retry.
	BatchPending BatchState = "pending"
	// BatchDismissed lost every member to a dismissal before delivery.
	BatchDismissed BatchState = "dismissed"
)

// EmptyPayload is the payload of a finished batch (reference-behaviour
// §6: cleared to an empty array).
const EmptyPayload = "[]"

// NewBatch is a batch that admission opens for one registration.
type NewBatch struct {
	// ID is the batch's id, which its first recipient was recorded with
	// (Recipient.BatchID); a new one is made when it is empty.
	ID             string
	Host           string
	RegistrationID string
	Kind           contract.Kind
	// Payload is the JSON array of the members' notifications; Members
	// is its length.
	Payload string
	Members int
	// DueAt is when it should be delivered, ExpiresAt its deadline, both
	// epoch milliseconds.
	DueAt     int64
	ExpiresAt int64
	// LeaseToken, when set, leases the batch at its admission to the
	// delivery that sends it in the same request (delivery.Inline) until
	// LeaseUntil, its first attempt counted: the claim is made with the
	// insert instead of in a transaction of its own. Only a batch due at
	// once, of a registration with no other batch in flight
	// (Pending.InFlight), may be leased so.
	LeaseToken string
	LeaseUntil int64
	// HeldAt, when set, marks the batch held back as a claim does
	// (ClaimBatch): another batch of its registration is in flight, and
	// its holder hands on to this one when it ends.
	HeldAt int64
}

// NewBatchID returns a new batch id: a UUID of version 7, whose text
// grows with the time it was made, so that a batch's key is inserted at the
// right end of the batches' primary key index, as the previous one was:
// PostgreSQL then inserts it without a search from the root (the btree's
// fastpath) and a busy table's inserts touch the index's last pages only
// instead of any (scripts/pgcount -mode push: 6,000 instructions a push
// fewer than with random ids, most of it at the batch's end, whose update
// writes the key again). Its time is the system's, not the gateway's
// clock: it orders keys and is read as nothing else. It panics only when
// the system's random source fails, as uuid.NewString does.
func NewBatchID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// InsertBatch stores b as a pending batch created at now and returns its
// id. The caller hands it to the scheduler after commit, so scheduled_at is
// now.
func (t *Tx) InsertBatch(ctx context.Context, b NewBatch, now int64) (string, error) {
	ids, err := t.InsertBatches(ctx, []NewBatch{b}, now)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// InsertBatches is [Tx.InsertBatch] for several batches in one statement,
// whose rows share one INSERT: a send to many registrations writes them all
// at once. It returns the ids in the order of bs.
func (t *Tx) InsertBatches(ctx context.Context, bs []NewBatch, now int64) ([]string, error) {
	if len(bs) == 0 {
		return nil, nil
	}
	// The lease columns are written only when a batch is leased or held
	// back; otherwise they keep their defaults (no lease, no attempt, not
	// held), and the statement is the one a send through tasks or with a
	// window always wrote.
	leases := slices.ContainsFunc(bs, func(b NewBatch) bool { return b.LeaseToken != "" || b.HeldAt != 0 })
	cols, columns := 9, ""
	if leases {
		cols, columns = 13, ", lease_token, lease_until, attempts, held_at"
	}
	ids := make([]string, len(bs))
	args := make([]any, 0, cols*len(bs))
	var values strings.Builder
	for i, b := range bs {
		if ids[i] = b.ID; ids[i] == "" {
			ids[i] = NewBatchID()
		}
		if i > 0 {
			values.WriteString(", ")
		}
		n := i*cols + 1
		fmt.Fprintf(&values, "($%d, $%d, $%d, $%d, $%d, $%d, 'pending', $%d, $%d, $%d, $%d",
			n, n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+8)
		args = append(args, ids[i], b.Host, b.RegistrationID, string(b.Kind), b.Payload, b.Members, b.DueAt, b.ExpiresAt, now)
		if leases {
			fmt.Fprintf(&values, ", $%d, $%d, $%d, $%d", n+9, n+10, n+11, n+12)
			var (
				token    *string
				attempts int
			)
			if b.LeaseToken != "" {
				token, attempts = &b.LeaseToken, 1
			}
			args = append(args, token, b.LeaseUntil, attempts, b.HeldAt)
		}
		values.WriteString(")")
	}
	err := t.later(ctx, "insert batches", `INSERT INTO push_delivery_batches
		(batch_id, host_fingerprint, registration_id, kind, payload_json, members, state,
		 due_at, expires_at, scheduled_at, created_at`+columns+`)
		VALUES `+values.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("insert batches: %w", err)
	}
	return ids, nil
}

// JoinBatch replaces a pending batch's members with payload (members long)
// and lowers its deadline to expiresAt; its due time stays (the window is
// fixed by the first alert, reference-behaviour §5.1).
func (t *Tx) JoinBatch(ctx context.Context, id, payload string, members int, expiresAt int64) error {
	err := t.later(ctx, "join batch", `UPDATE push_delivery_batches SET payload_json = $2, members = $3,
		expires_at = CASE WHEN expires_at < $4 THEN expires_at ELSE $4 END
		WHERE batch_id = $1 AND state = 'pending'`, id, payload, members, expiresAt)
	if err != nil {
		return fmt.Errorf("join batch: %w", err)
	}
	return nil
}

// Join is a join of a pending batch: its members become Payload (Members
// long) and its deadline falls to ExpiresAt if that is earlier.
type Join struct {
	ID        string
	Payload   string
	Members   int
	ExpiresAt int64
}

// JoinBatches is [Tx.JoinBatch] for the joins of one send, one per
// registration: on PostgreSQL in one statement, whose rows share one
// UPDATE (a send to five phones that all join pays for one statement, not
// five); on SQLite, where a statement costs no round trip, one each. The
// batches are also named by their ids as an array, so that their key's
// index finds them: by the join with the arrays alone, a plan made on a
// small table read every batch (scripts/pgcount -mode window -regs 5,
// whose cluster runs no autovacuum to replan: 1.8 M instructions a send;
// TestWindowCostHeld).
func (t *Tx) JoinBatches(ctx context.Context, js []Join) error {
	if len(js) < 2 || !t.pipelined() {
		for _, j := range js {
			if err := t.JoinBatch(ctx, j.ID, j.Payload, j.Members, j.ExpiresAt); err != nil {
				return err
			}
		}
		return nil
	}
	ids, payloads := make([]string, len(js)), make([]string, len(js))
	members, expires := make([]int64, len(js)), make([]int64, len(js))
	for i, j := range js {
		ids[i], payloads[i], members[i], expires[i] = j.ID, j.Payload, int64(j.Members), j.ExpiresAt
	}
	err := t.later(ctx, "join batches", `UPDATE push_delivery_batches b SET payload_json = j.payload,
		members = j.members, expires_at = LEAST(b.expires_at, j.expires)
		FROM unnest(CAST($1 AS TEXT[]), CAST($2 AS TEXT[]), CAST($3 AS INTEGER[]), CAST($4 AS BIGINT[]))
			AS j(id, payload, members, expires)
		WHERE b.batch_id = ANY(CAST($1 AS TEXT[])) AND b.batch_id = j.id AND b.state = 'pending'`, ids, payloads, members, expires)
	if err != nil {
		return fmt.Errorf("join batches: %w", err)
	}
	return nil
}

// MakeDue makes a pending batch due at now, when the next alert cannot join
// it. The caller hands it to the scheduler after commit, so scheduled_at is
// now.
func (t *Tx) MakeDue(ctx context.Context, id string, now int64) error {
	err := t.later(ctx, "make batch due", `UPDATE push_delivery_batches SET due_at = $2, scheduled_at = $2
		WHERE batch_id = $1 AND state = 'pending'`, id, now)
	if err != nil {
		return fmt.Errorf("make batch due: %w", err)
	}
	return nil
}

// BatchPayload is a batch's id and members.
type BatchPayload struct {
	ID      string
	Payload string
}

// CancellableBatches returns the registration's pending alert batches that no
// delivery holds a lease on at now, oldest first: those a dismissal may
// remove alerts from (reference-behaviour §4.4).
func (t *Tx) CancellableBatches(ctx context.Context, host, registrationID string, now int64) ([]BatchPayload, error) {
	s := cancellableStmt(host, registrationID, now)
	rows, err := t.r.query(ctx, s.query, s.args...)
	return scanCancellable(rows, err)
}

// cancellableStmt is CancellableBatches' statement.
func cancellableStmt(host, registrationID string, now int64) statement {
	return statement{op: "cancellable batches", query: `SELECT batch_id, payload_json FROM push_delivery_batches
		WHERE registration_id = $1 AND host_fingerprint = $2 AND state = 'pending' AND kind = 'alert'
			AND lease_until <= $3
		ORDER BY created_at, batch_id`, args: []any{registrationID, host, now}}
}

// scanCancellable reads CancellableBatches' rows.
func scanCancellable(rows rowSet, err error) ([]BatchPayload, error) {
	if err != nil {
		return nil, fmt.Errorf("cancellable batches: %w", err)
	}
	defer rows.Close()
	var out []BatchPayload
	for rows.Next() {
		var b BatchPayload
		if err := rows.Scan(&b.ID, &b.Payload); err != nil {
			return nil, fmt.Errorf("cancellable batches: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cancellable batches: %w", err)
	}
	return out, nil
}

// SetBatchMembers replaces a pending batch's members with payload (members
// long, at least one) after a dismissal removed some, and gives back the
// part of its badge raise the removed ones made.
func (t *Tx) SetBatchMembers(ctx context.Context, id, payload string, members int) error {
	err := t.later(ctx, "set batch members", `UPDATE push_delivery_batches SET payload_json = $2, members = $3
		WHERE batch_id = $1 AND state = 'pending'`, id, payload, members)
	if err == nil {
		err = t.lowerRaise(ctx, id, members, BatchPending)
	}
	if err != nil {
		return fmt.Errorf("set batch members: %w", err)
	}
	return nil
}

// DismissBatch finishes a pending batch whose every member a dismissal
// removed: state dismissed, payload cleared, its badge raise given back.
func (t *Tx) DismissBatch(ctx context.Context, id string, now int64) error {
	err := t.later(ctx, "dismiss batch", `UPDATE push_delivery_batches SET state = 'dismissed', payload_json = $2,
		members = 0, finished_at = $3 WHERE batch_id = $1 AND state = 'pending'`, id, EmptyPayload, now)
	if err == nil {
		err = t.lowerRaise(ctx, id, 0, BatchDismissed)
	}
	if err != nil {
		return fmt.Errorf("dismiss batch: %w", err)
	}
	return nil
}

// Batch is a stored delivery batch.
type Batch struct {
	ID             string
	Host           string
	RegistrationID string
	Kind           contract.Kind
	Payload        string
	Members        int
	State          BatchState
	DueAt          int64
	ExpiresAt      int64
	LeaseUntil     int64
	// LeaseToken names the delivery holding the batch; empty when none.
	LeaseToken  string
	Attempts    int
	ScheduledAt int64
	CreatedAt   int64
	// Badge is the badge number its first attempt carried, recorded with
	// the raise (Store.StampBadge); 0 when none was (no badge, a dismissal,
	// or not yet attempted): a stamped number is at least 1, so a delivery
	// knows the raise is made. A retry carries the registration's count
	// instead (Device.Badge). Read by the claim only.
	Badge int64
}

// Batch reads one batch; ErrNoRow when there is none.
func (s *Store) Batch(ctx context.Context, id string) (Batch, error) {
	return readBatch(ctx, sqlRunner{s.db}, id)
}

func readBatch(ctx context.Context, r runner, id string) (Batch, error) {
	var b Batch
	var token sql.NullString
	err := r.queryRow(ctx, `SELECT batch_id, host_fingerprint, registration_id, kind, payload_json,
		members, state, due_at, expires_at, lease_until, lease_token, attempts, scheduled_at, created_at
		FROM push_delivery_batches WHERE batch_id = $1`, id).
		Scan(&b.ID, &b.Host, &b.RegistrationID, &b.Kind, &b.Payload, &b.Members, &b.State,
			&b.DueAt, &b.ExpiresAt, &b.LeaseUntil, &token, &b.Attempts, &b.ScheduledAt, &b.CreatedAt)
	b.LeaseToken = token.String
	if errors.Is(err, sql.ErrNoRows) {
		return Batch{}, ErrNoRow
	}
	if err != nil {
		return Batch{}, fmt.Errorf("read batch: %w", err)
	}
	return b, nil
}
