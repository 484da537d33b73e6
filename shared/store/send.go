package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"onorca.dev/push/shared/contract"
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
	// NoJoin, for an alert that joins no batch (no coalescing window, or
	// a sealed alert), spares PostgreSQL reading each registration's open
	// batch: Pending.Open is then empty.
	NoJoin bool
	// Lease makes PostgreSQL read, with each recipient, what a lease at
	// admission needs (Pending.Device, Pending.InFlight): set when the
	// send may open a batch due at once that its request delivers
	// (delivery.Inline). Without it both are empty.
	Lease bool
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
// lock). The checks are those of [Tx.InsertEvent] and [Tx.AddRecipient]. On
// PostgreSQL one statement does it all (startSendStmt); on SQLite, where a
// statement costs no round trip, each of them is its own.
func (t *Tx) StartSend(ctx context.Context, s SendStart, now int64) (SendStarted, error) {
	if t.pipelined() && s.Add && len(s.Recipients) > 0 {
		return t.startSendOnce(ctx, s, now)
	}
	var stmts []statement
	if s.TokenHash != "" {
		stmts = append(stmts, sessionStmt(s.TokenHash, s.Event.Host))
	}
	if s.Add {
		stmts = append(stmts, insertEventStmt(s.Event, now))
		for _, r := range s.Recipients {
			stmts = append(stmts, addRecipientStmt(r, now, s.Lease))
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
		for i := range s.Recipients {
			var err error
			r := s.Recipients[i]
			if out.Added[i], out.Pending[i], err = scanAddedRecipient(res.row(), r.RegistrationID, r.Host); err != nil {
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

// sessionStmt reads the expiry of the session whose token hashes to
// tokenHash, when it is host's.
func sessionStmt(tokenHash, host string) statement {
	return statement{op: "read session", query: `SELECT expires_at FROM push_sessions
		WHERE token_hash = $1 AND host_fingerprint = $2`, args: []any{tokenHash, host}}
}

// startSendOnce is StartSend on PostgreSQL, for a send that records: one
// statement instead of three, so the gateway encodes and reads one (about
// 7 µs of its CPU per request, BenchmarkSendAdmission) and the database
// binds and plans one.
func (t *Tx) startSendOnce(ctx context.Context, s SendStart, now int64) (SendStarted, error) {
	st := startSendStmt(s, now)
	rows, err := t.r.query(ctx, st.query, st.args...)
	if err != nil {
		return SendStarted{}, fmt.Errorf("start send: %w", err)
	}
	defer rows.Close()
	out := SendStarted{Added: make([]bool, len(s.Recipients)), Pending: make([]Pending, len(s.Recipients))}
	for rows.Next() {
		var (
			reg     sql.NullString
			session sql.NullInt64
			p       pendingRow
		)
		if err := rows.Scan(append([]any{&reg, &session}, p.dest(s.Lease)...)...); err != nil {
			return SendStarted{}, fmt.Errorf("start send: %w", err)
		}
		if s.TokenHash != "" { // every row carries the session
			out.SessionFound, out.SessionExpiresAt = session.Valid, session.Int64
		}
		if !reg.Valid { // no recipient recorded
			continue
		}
		// At most 20 registrations: a look along them costs less than a map.
		i := slices.IndexFunc(s.Recipients, func(r Recipient) bool { return r.RegistrationID == reg.String })
		if i < 0 {
			return SendStarted{}, errors.New("start send: unexpected registration in the answer")
		}
		out.Added[i], out.Pending[i] = true, p.pending(reg.String, s.Event.Host)
	}
	if err := rows.Err(); err != nil {
		return SendStarted{}, fmt.Errorf("start send: %w", err)
	}
	return out, nil
}

// startSendStmt is the statements of StartSend in one, on PostgreSQL: the
// session read, [Tx.InsertEvent]'s and [Tx.AddRecipient]'s for every
// recipient of s (they share their event, host, kind and fence, as the
// recipients of one send do), with the same checks. It returns a row for
// each recipient recorded, led by its registration id, with the event's
// deadline and the open batch and cancellable count AddRecipient reads (and
// what a lease needs, only with s.Lease), or one row with a NULL
// registration id when it recorded none; every row carries the session's
// expiry (NULL when there is no such session, or s has no TokenHash). The
// session's expiry is a column of each row rather than a row of its own
// (UNION ALL), and the lease's columns are left out without s.Lease: every
// column of every row is a projection the executor starts, and the row of
// its own cost a send 24,000 instructions, the lease's columns a joining
// send 12,000 more (scripts/pgcount -mode push and -mode window).
//
// Every part of one statement reads the database as it was when the
// statement began, so the recipients cannot look the new event up in
// push_events: they are recorded when the insert returned the event, with
// its deadline ($11) still ahead, or when the event stored before ("old")
// has the content and a deadline ahead. At most one of the two exists: the
// insert runs only when no event has the id, and it is a plain insert, not
// ON CONFLICT DO NOTHING, because no other transaction can insert the id
// between the read and the insert: an event's id hashes its host
// (delivery's eventID) and every send of a host runs under its lock. (Were
// one to, the statement would fail on the primary key and the send with it,
// storing nothing twice.) The speculative insertion and a second read of
// the event cost 4,500 instructions more a joining send. The registrations
// are read once ("dev") for the event's check, the recipients' and a
// lease's columns, rather than by an index probe each (4,500 a joining
// send, 19,000 a leased push), and the registrations are an array, so the
// statement's text, and its prepared plan, do not depend on their number.
// The recipients are dev's rows, each with its registration's first place
// in the request ($9) and the batch sent for it there ($14), found by
// array_position: the request's arrays unnested and joined with dev cost a
// hash table and a push 38,000 instructions more (scripts/pgcount -mode
// push). A registration repeated in the request has one recipient, at its
// first place, as the repeat's conflict left it before.
//
// The quota's count reads event_id, a column its index (host, kind,
// created_at) does not hold, so that PostgreSQL scans the index and reads
// each row rather than scanning the index only: the window's rows are too
// recent for the visibility map to vouch for them, so an index-only scan
// read every row too, after forming the index entry's three columns and
// reading the map; the plain scan cost a joining send with 136 events in
// the window 64,000 instructions less (scripts/pgcount -mode window
// -members 16).
//
// A recipient's ordinal, which orders an event's recipients as they were
// first accepted, is the transaction's id times 64 plus its place in the
// request: the sends of one event run one after the other under their host's
// lock, each in a transaction of its own (a group holds one send per host)
// that has its id only once it holds the lock, so a later send's ids are
// higher. Reading the event's highest ordinal instead, as SQLite's statement
// does, cost 5 % more of PostgreSQL's instructions per send (scripts/pgcount,
// 1 registration, a quiet host: 772k against 734k; 710k without receipts),
// most of it for planning the extra subquery.
func startSendStmt(s SendStart, now int64) statement {
	var fence Fence
	if f := s.Recipients[0].Fence; f != nil {
		fence = *f
	}
	regs := make([]string, len(s.Recipients))
	batches := make([]string, len(s.Recipients))
	for i, r := range s.Recipients {
		regs[i], batches[i] = r.RegistrationID, r.BatchID
	}
	e := s.Event
	query := startSendTexts[[3]bool{e.Kind == contract.KindDismiss, s.NoJoin, s.Lease}]
	return statement{op: "start send", query: query,
		args: []any{e.ID, now, e.Host, fence.Epoch, fence.NotificationID, fence.Seq, string(e.Kind),
			e.Fingerprint, regs, s.TokenHash, e.Deadline, e.QuotaSince, e.Quota, batches, e.FormerFingerprint}}
}

// The texts of startSendStmt: its common part, then each recipient's row.
// For an alert the row carries the open batch it may join, for a dismissal
// the count of the alert batches it may cancel. Each kind has a text of its
// own, so that PostgreSQL starts no plan node the kind does not run: 2 to
// 4 % of its instructions per send (scripts/pgcount).
const (
	// startSendCommon's first %s is the columns of the registrations read
	// (devices or leaseDevices), its second the batch each recipient is
	// recorded with (recipientBatch or openRecipientBatch).
	startSendCommon = `WITH session AS (
			SELECT expires_at FROM push_sessions WHERE token_hash = $10 AND host_fingerprint = $3),
		dev AS (
			SELECT %s FROM push_devices
			WHERE registration_id = ANY(CAST($9 AS TEXT[])) AND host_fingerprint = $3 AND dead_at IS NULL),
		old AS (SELECT fingerprint, expires_at FROM push_events WHERE event_id = $1),
		new_event AS (
			INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
			SELECT $1, $3, $7, $8, CAST($2 AS BIGINT), CAST($11 AS BIGINT)
			WHERE NOT EXISTS (SELECT 1 FROM old) AND EXISTS (SELECT 1 FROM dev)
				AND (SELECT COUNT(event_id) FROM push_events
					WHERE host_fingerprint = $3 AND kind = $7 AND created_at > $12) < $13
			RETURNING fingerprint, expires_at),
		added AS (
			INSERT INTO push_event_recipients (event_id, registration_id, created_at, batch_id, ordinal)
			SELECT $1, u.registration_id, CAST($2 AS BIGINT), %s,
				txid_current() * 64 + array_position(CAST($9 AS TEXT[]), u.registration_id)
			FROM dev u
			WHERE ((CAST($11 AS BIGINT) > $2 AND EXISTS (SELECT 1 FROM new_event))
					OR EXISTS (SELECT 1 FROM old WHERE fingerprint IN ($8, $15) AND expires_at > $2))
				AND NOT EXISTS (SELECT 1 FROM push_dismissed_events
					WHERE host_fingerprint = $3 AND notification_epoch = $4 AND notification_id = $5
						AND notification_seq >= $6)
			ON CONFLICT (event_id, registration_id) DO NOTHING
			RETURNING registration_id, batch_id)
		`
	// The registration's open batch an alert may join, and the count of
	// the alert batches a dismissal may cancel.
	startSendOpen     = `o.batch_id, o.payload_json, o.members, o.due_at, o.expires_at, CAST(0 AS BIGINT)`
	startSendOpenFrom = ` LEFT JOIN push_delivery_batches o ON o.batch_id = a.batch_id`
	// recipientBatch is the batch a recipient is recorded with: $14's new
	// one, which it opens, at the registration's place in $9.
	// openRecipientBatch, for an alert that may join, is the
	// registration's open batch when there is one (a
	// pending alert batch never attempted, due and expiring after now),
	// which the alert most often joins: it is then recorded with it, and
	// with no second write (Tx.MoveRecipient) when it does. The final
	// SELECT reads that batch through the recipient's batch_id: the new
	// batch is not inserted yet, so a recipient recorded with it finds none.
	//
	// A registration has at most one open batch: a send under the host
	// lock opens one only after it made the open one due (coalesceAlert),
	// and a batch opened due now is never open. The order by due time is
	// the pending index's own, so the read needs no sort (8,000
	// instructions per joining send, scripts/pgcount -mode window).
	recipientBatch     = `(CAST($14 AS TEXT[]))[array_position(CAST($9 AS TEXT[]), u.registration_id)]`
	openRecipientBatch = `COALESCE((SELECT batch_id FROM push_delivery_batches
				WHERE registration_id = u.registration_id AND host_fingerprint = $3 AND state = 'pending'
					AND kind = 'alert' AND attempts = 0 AND due_at > $2 AND expires_at > $2
				ORDER BY due_at DESC LIMIT 1), ` + recipientBatch + `)`
	startSendNoOpen = `CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS INTEGER), CAST(NULL AS BIGINT),
			CAST(NULL AS BIGINT), CAST(0 AS BIGINT)`
	startSendCancellable = `CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS INTEGER), CAST(NULL AS BIGINT),
			CAST(NULL AS BIGINT), (SELECT COUNT(*) FROM push_delivery_batches
				WHERE registration_id = a.registration_id AND host_fingerprint = $3 AND state = 'pending'
					AND kind = 'alert' AND lease_until <= $2)`
	// What a lease at admission needs (SendStart.Lease): the registration
	// as a delivery sends to it, and whether a pending batch of it holds a
	// live lease at $2 (Pending.InFlight; EXISTS and not the latest lease:
	// no aggregate to start).
	startSendLease = `d.token, d.platform, d.apns_environment, d.badge_count,
			EXISTS (SELECT 1 FROM push_delivery_batches s
				WHERE s.registration_id = a.registration_id AND s.state = 'pending' AND s.lease_until > $2)`
	startSendLeaseFrom = ` JOIN dev d ON d.registration_id = a.registration_id`
	// The registrations' columns dev reads: their ids, and with a lease at
	// admission what a delivery sends to (startSendLease). A column more
	// in the CTE, which is materialised, costs whether it is read or not:
	// 5,000 instructions per joining send for the lease's four.
	devices      = `registration_id`
	leaseDevices = `registration_id, token, platform, apns_environment, badge_count`
)

// startSendText is the text of startSendStmt for a kind (open: an alert
// that may join an open batch; neither: an alert that joins none; dismiss)
// and whether it reads what a lease at admission needs: each has a text of
// its own, so that PostgreSQL starts no plan node it does not run.
func startSendText(kind contract.Kind, noJoin, lease bool) string {
	cols, from := startSendNoOpen, ""
	switch {
	case kind == contract.KindDismiss:
		cols = startSendCancellable
	case !noJoin:
		cols, from = startSendOpen, startSendOpenFrom
	}
	if lease {
		cols += ", " + startSendLease
		from = startSendLeaseFrom + from
	}
	batch := recipientBatch
	if kind == contract.KindAlert && !noJoin {
		batch = openRecipientBatch
	}
	recipients := `added a`
	if from != "" {
		recipients = `(added a` + from + `)` // a join in parentheses
	}
	dev := devices
	if lease {
		dev = leaseDevices
	}
	return fmt.Sprintf(startSendCommon, dev, batch) + `SELECT a.registration_id, s.expires_at,
			COALESCE((SELECT expires_at FROM old), CAST($11 AS BIGINT)), ` + cols + `
		FROM (SELECT (SELECT expires_at FROM session) AS expires_at) s LEFT JOIN ` + recipients + ` ON TRUE`
}

// startSendTexts holds startSendText's texts, made once.
var startSendTexts = func() map[[3]bool]string {
	m := make(map[[3]bool]string)
	for _, kind := range []contract.Kind{contract.KindAlert, contract.KindDismiss} {
		for _, noJoin := range []bool{false, true} {
			for _, lease := range []bool{false, true} {
				m[[3]bool{kind == contract.KindDismiss, noJoin, lease}] = startSendText(kind, noJoin, lease)
			}
		}
	}
	return m
}()

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
