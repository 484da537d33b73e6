package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SendStart is the first round trip of admitting one /v1/send under the
// host lock (reference-behaviour §4.2 for every registration at once).
type SendStart struct {
	// TokenHash, when not empty, is the hash of the bearer the send came
	// with: its session is read first, so a session revoked, replaced or
	// expired since the edge saw it is refused.
	TokenHash string
	// Event is the event to record (InsertEvent), when Add is set.
	Event NewEvent
	// Add makes the round trip record the event and one recipient per
	// registration in Recipients (AddRecipient); without it only the
	// session is read. The recipients are the event's: they share its id,
	// host, kind, content fingerprint and fence.
	Add        bool
	Recipients []Recipient
}

// SendStarted is what the first round trip found.
type SendStarted struct {
	// SessionFound reports whether the bearer's session exists for the
	// host; SessionExpiresAt is its expiry. Both are zero without a
	// TokenHash.
	SessionFound     bool
	SessionExpiresAt int64
	// Added[i] and Pending[i] are [Tx.AddRecipient]'s answer for
	// Recipients[i].
	Added   []bool
	Pending []Pending
}

// StartSend reads the session and records the event and the recipients of s
// at now, all in one round trip on PostgreSQL (with BEGIN and the host
// lock): the statements are those of [Tx.InsertEvent] and [Tx.AddRecipient].
func (t *Tx) StartSend(ctx context.Context, s SendStart, now int64) (SendStarted, error) {
	var stmts []statement
	if s.TokenHash != "" {
		stmts = append(stmts, statement{op: "read session", query: `SELECT expires_at FROM push_sessions
			WHERE token_hash = $1 AND host_fingerprint = $2`, args: []any{s.TokenHash, s.Event.Host}})
	}
	// On PostgreSQL one statement records every recipient; on SQLite,
	// where a statement costs no round trip, each has its own.
	onePerSend := t.pipelined() && len(s.Recipients) > 0
	if s.Add {
		stmts = append(stmts, insertEventStmt(s.Event, now))
		if onePerSend {
			stmts = append(stmts, addRecipientsStmt(s.Recipients, now))
		} else {
			for _, r := range s.Recipients {
				stmts = append(stmts, addRecipientStmt(r, now))
			}
		}
	}
	var out SendStarted
	if len(stmts) == 0 {
		return out, nil
	}
	res, err := t.r.batch(ctx, stmts)
	if err != nil {
		return SendStarted{}, fmt.Errorf("start send: %w", err)
	}
	err = func() error {
		if s.TokenHash != "" {
			err := res.row().Scan(&out.SessionExpiresAt)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return fmt.Errorf("read session: %w", err)
			default:
				out.SessionFound = true
			}
		}
		if !s.Add {
			return nil
		}
		if _, err := res.exec(); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		out.Added, out.Pending = make([]bool, len(s.Recipients)), make([]Pending, len(s.Recipients))
		if onePerSend {
			rows, err := res.rows()
			return scanAddedRecipients(rows, err, s.Recipients, out.Added, out.Pending)
		}
		for i := range s.Recipients {
			var err error
			if out.Added[i], out.Pending[i], err = scanAddedRecipient(res.row()); err != nil {
				return err
			}
		}
		return nil
	}()
	if err := closeResults(res, err, "start send"); err != nil {
		return SendStarted{}, err
	}
	return out, nil
}

// SendQuery is the second round trip of a send, made only when the first
// left something to read: why some registrations got no recipient, the
// dismissal fence, the alert batches a dismissal may cancel.
type SendQuery struct {
	Host    string
	EventID string
	// Check lists the registrations whose state [Tx.CheckEvent] reads.
	Check []string
	// Fence, when set, is raised ([Tx.RaiseFence]).
	Fence *Fence
	// Cancellable lists the registrations whose cancellable batches
	// [Tx.CancellableBatches] reads.
	Cancellable []string
}

// SendFacts is what the second round trip read, in the order of the query.
type SendFacts struct {
	Checks []EventCheck
	// FenceSeq is the fence's sequence once raised.
	FenceSeq    int64
	Cancellable [][]BatchPayload
}

// SendFacts reads q at now in one round trip on PostgreSQL; an empty q
// makes none.
func (t *Tx) SendFacts(ctx context.Context, q SendQuery, now int64) (SendFacts, error) {
	var stmts []statement
	for _, reg := range q.Check {
		stmts = append(stmts, checkEventStmt(q.Host, reg, q.EventID))
	}
	if q.Fence != nil {
		stmts = append(stmts, raiseFenceStmt(q.Host, *q.Fence, now))
	}
	for _, reg := range q.Cancellable {
		stmts = append(stmts, cancellableStmt(q.Host, reg, now))
	}
	var out SendFacts
	if len(stmts) == 0 {
		return out, nil
	}
	res, err := t.r.batch(ctx, stmts)
	if err != nil {
		return SendFacts{}, fmt.Errorf("send facts: %w", err)
	}
	err = func() error {
		out.Checks = make([]EventCheck, len(q.Check))
		for i := range q.Check {
			var err error
			if out.Checks[i], err = scanEventCheck(res.row()); err != nil {
				return err
			}
		}
		if q.Fence != nil {
			var err error
			if out.FenceSeq, err = scanFence(res.row()); err != nil {
				return err
			}
		}
		out.Cancellable = make([][]BatchPayload, len(q.Cancellable))
		for i := range q.Cancellable {
			var err error
			if out.Cancellable[i], err = scanCancellable(res.rows()); err != nil {
				return err
			}
		}
		return nil
	}()
	if err := closeResults(res, err, "send facts"); err != nil {
		return SendFacts{}, err
	}
	return out, nil
}

// closeResults closes res and returns err, or else the error closing
// reported, named op.
func closeResults(res results, err error, op string) error {
	if cerr := res.close(); err == nil && cerr != nil {
		return fmt.Errorf("%s: %w", op, cerr)
	}
	return err
}
