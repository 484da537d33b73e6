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
	// QuotaMode is how an alert's quota is decided on PostgreSQL: the
	// SendStarted.QuotaMode of the host's last send.
	QuotaMode QuotaMode
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
	// QuotaMode is the mode the host's next send should start with.
	QuotaMode QuotaMode
}

// StartSend reads the session and records the event and the recipients of s
// at now, all in one round trip on PostgreSQL (with the host lock). The checks are those of [Tx.InsertEvent] and [Tx.AddRecipient]. On
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
	mode := s.QuotaMode
	if s.Event.Kind != contract.KindAlert || s.TokenHash == "" {
		out, _, err := t.startSendRows(ctx, s, now, mode)
		out.QuotaMode = s.QuotaMode
		return out, err
	}
	out, state, err := t.startSendRows(ctx, s, now, mode)
	if err == nil && mode == QuotaRing && out.SessionFound && state.Int64 < 0 && !slices.Contains(out.Added, true) {
		// No whole ring to decide by, and nothing recorded (a stored
		// event's recipients need no quota): once more, rebuilding it.
		mode = QuotaRebuild
		out, state, err = t.startSendRows(ctx, s, now, mode)
	}
	if err != nil {
		return SendStarted{}, err
	}
	ringed := mode == QuotaCount && out.SessionExpiresAt < 0 // countQuota's expiry
	if ringed {
		out.SessionExpiresAt = -out.SessionExpiresAt
	}
	switch {
	case !out.SessionFound:
		out.QuotaMode = s.QuotaMode
	case ringed:
		if state.Valid { // admitted by the count: the ring takes it too
			if err := t.later(ctx, "advance ring", advanceRing, s.TokenHash, now, s.Event.Quota); err != nil {
				return SendStarted{}, fmt.Errorf("start send: %w", err)
			}
		}
		out.QuotaMode = QuotaRing
	case mode == QuotaCount && state.Int64 >= ringFrom:
		out.QuotaMode = QuotaRebuild
	case mode == QuotaCount:
		out.QuotaMode = QuotaCount
	case mode == QuotaRing && state.Int64 < 0: // recipients of a stored event beside no whole ring
		out.QuotaMode = QuotaRebuild
	case mode == QuotaRing && state.Int64 == 0: // dropped
		out.QuotaMode = QuotaCount
	default:
		out.QuotaMode = QuotaRing
	}
	return out, nil
}

// startSendRows runs startSendStmt in mode and reads its rows, and the
// quota's state (the session CTE's, see the quota's texts).
func (t *Tx) startSendRows(ctx context.Context, s SendStart, now int64, mode QuotaMode) (out SendStarted, state sql.NullInt64, err error) {
	st := startSendStmt(s, now, mode)
	rows, err := t.r.query(ctx, st.query, st.args...)
	if err != nil {
		return SendStarted{}, state, fmt.Errorf("start send: %w", err)
	}
	defer rows.Close()
	out = SendStarted{Added: make([]bool, len(s.Recipients)), Pending: make([]Pending, len(s.Recipients))}
	for rows.Next() {
		var (
			reg     sql.NullString
			session sql.NullInt64
			p       pendingRow
		)
		if err := rows.Scan(append([]any{&reg, &session, &state}, p.dest(s.Lease)...)...); err != nil {
			return SendStarted{}, state, fmt.Errorf("start send: %w", err)
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
			return SendStarted{}, state, errors.New("start send: unexpected registration in the answer")
		}
		out.Added[i], out.Pending[i] = true, p.pending(reg.String, s.Event.Host)
	}
	if err := rows.Err(); err != nil {
		return SendStarted{}, state, fmt.Errorf("start send: %w", err)
	}
	return out, state, nil
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
func startSendStmt(s SendStart, now int64, mode QuotaMode) statement {
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
	plain := e.Kind != contract.KindAlert || s.TokenHash == ""
	if plain {
		mode = QuotaCount
	}
	query := startSendTexts[sendText{e.Kind == contract.KindDismiss, s.NoJoin, s.Lease, plain, mode}]
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
	// startSendCommon's %s are, in order: the session's read (a
	// quotaText's session); the columns of the registrations read (devices
	// or leaseDevices); what the quota needs before the event's insert (a
	// quotaText's before); the event's uncounted and window_count columns and where they come from
	// (a quotaText's values); the event's insert's condition (a quotaText's
	// admit); what follows the insert (a quotaText's after); the batch each
	// recipient is recorded with (recipientBatch or openRecipientBatch).
	startSendCommon = `WITH %s,
		dev AS (
			SELECT %s FROM push_devices
			WHERE registration_id = ANY(CAST($9 AS TEXT[])) AND host_fingerprint = $3 AND dead_at IS NULL),
		old AS (SELECT fingerprint, expires_at FROM push_events WHERE event_id = $1),%s
		new_event AS (
			INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at,
				uncounted, window_count)
			SELECT $1, $3, $7, $8, CAST($2 AS BIGINT), CAST($11 AS BIGINT), %s
			WHERE NOT EXISTS (SELECT 1 FROM old) AND EXISTS (SELECT 1 FROM dev) AND %s
			RETURNING fingerprint, expires_at, window_count),%s
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
	// live lease at $2, as heldAdmission's update found and marked it
	// (Pending.InFlight).
	startSendLease = `d.token, d.platform, d.apns_environment, d.badge_count,
			EXISTS (SELECT 1 FROM held h WHERE h.registration_id = a.registration_id)`
	startSendLeaseFrom = ` JOIN dev d ON d.registration_id = a.registration_id`
	// The registrations' columns dev reads: their ids, and with a lease at
	// admission what a delivery sends to (startSendLease). A column more
	// in the CTE, which is materialised, costs whether it is read or not:
	// 5,000 instructions per joining send for the lease's four.
	devices      = `registration_id`
	leaseDevices = `registration_id, token, platform, apns_environment, badge_count`
)

// QuotaMode is how the statement that admits an alert with a session on
// PostgreSQL decides the host's quota (300 alerts in 15 minutes): by a
// count of the window's alerts, which costs about 2,100 of PostgreSQL's
// instructions an alert counted, or by the ring kept in the host's session
// (migration 0013), whose update costs about 70,000 and reads no alert
// (scripts/pgcount -mode push: at the quota 1.05 M a push instead of
// 1.54 M). Every mode decides exactly; the mode is only which is cheaper
// for the host now, a hint the caller keeps per host from the SendStarted
// of its last send. A wrong hint costs a statement more at most: the
// statement reports what it found and runs again in the mode that fits.
// SQLite always counts.
type QuotaMode uint8

const (
	// QuotaCount counts the window's alerts.
	QuotaCount QuotaMode = iota
	// QuotaRing reads and advances the session's ring.
	QuotaRing
	// QuotaRebuild counts, and stores the ring in the session.
	QuotaRebuild
)

// The hysteresis between counting and the ring: a send that counts
// ringFrom alerts in the window has the host's next send build the ring;
// a send that finds fewer than ringUntil alerts in the window by the ring
// drops it as it admits. Below some 35 alerts a count costs less than the
// ring's update.
const (
	ringFrom  = 40
	ringUntil = 20
)

// quotaText is what a statement's quota mode puts in startSendCommon, and
// the final row's session and state columns: the session's expiry, and
// what startSendOnce reads to choose the host's next mode.
type quotaText struct {
	session, before, values, admit, after string
	expiry, state                         string
}

// The quota's texts. Each reads the session ($10, when it is the host's)
// in a CTE named session.
var (
	// plainQuota counts (dismissals, and a send without a session's
	// token, which leaves any ring of the host without its alert: such an
	// alert draws from push_events_uncounted, as an instance of the
	// previous version does, so that every ring is rebuilt).
	plainQuota = quotaText{
		session: `session AS (SELECT expires_at FROM push_sessions WHERE token_hash = $10 AND host_fingerprint = $3)`,
		values:  `CASE WHEN $7 = 'alert' THEN nextval('push_events_uncounted') END, CAST(NULL AS INTEGER)`,
		admit: `(SELECT COUNT(event_id) FROM push_events
					WHERE host_fingerprint = $3 AND kind = $7 AND created_at > $12) < $13`,
		expiry: `(SELECT expires_at FROM session)`,
		state:  `CAST(NULL AS BIGINT)`,
	}
	// countQuota (QuotaCount) counts as plainQuota does, and stores the
	// count in the event (window_count), whose RETURNING the final row's
	// state reads: the statement reads the session and the count once each
	// (a CTE read twice is materialised: 9,000 instructions a send more).
	// The expiry is negated when the session holds a ring (alert_n set):
	// an alert admitted by the count then advances the ring too
	// (advanceRing), and the host's next send reads it.
	countQuota = quotaText{
		session: `session AS (
			SELECT expires_at, alert_n FROM push_sessions WHERE token_hash = $10 AND host_fingerprint = $3)`,
		before: `
		win AS (
			SELECT COUNT(event_id) AS n FROM push_events
			WHERE host_fingerprint = $3 AND kind = $7 AND created_at > $12),`,
		values: `NULL, CAST(w.n AS INTEGER) FROM win w`,
		admit:  `w.n < $13`,
		expiry: `(SELECT CASE WHEN alert_n IS NULL THEN expires_at ELSE -expires_at END FROM session)`,
		state:  `(SELECT window_count FROM new_event)`,
	}
	// ringQuota (QuotaRing) reads the session and its ring. The ring's
	// element at the next admission's place holds the time of the alert
	// admitted 300 ($13) alerts before it (or alert_base, before the ring
	// held that many), so the window holds fewer than 300 alerts exactly
	// when that time is not inside it: admission times only grow, each its
	// send's now under the host's lock (to within the instances' clock
	// skew, as the count's window itself is). An alert admitted takes the place
	// and counts one more (tally), in the row version the read found; one
	// that finds fewer than ringUntil alerts in the window by the ring drops
	// it instead (alert_n NULL), and the host counts again. The ring
	// decides only while it is whole: 300 elements, a count, times within
	// int4 of its base, and no event inserted since it was built by an
	// instance that does not keep it (alert_seen, migration 0013). State: 1
	// while the ring stays, 0 when this send dropped it, -1 when there was
	// no whole ring to decide by (the send then runs again with
	// QuotaRebuild).
	ringQuota = quotaText{
		session: `session AS (
			SELECT s.ctid, s.expires_at, COALESCE(cardinality(s.alert_ring) = CAST($13 AS INTEGER) AND s.alert_n >= 0
					AND $2 - s.alert_base BETWEEN 0 AND 2147483647
					AND s.alert_seen = (SELECT last_value FROM push_events_uncounted), FALSE) AS whole,
				s.alert_base + s.alert_ring[` + ringPlace + `] <= $12 AS room
			FROM push_sessions s WHERE s.token_hash = $10 AND s.host_fingerprint = $3)`,
		before: `
		tally AS (
			UPDATE push_sessions s SET alert_ring[` + ringPlace + `] = CAST($2 - s.alert_base AS INTEGER),
				alert_n = CASE WHEN s.alert_base + s.alert_ring[` + ringCalm + `] <= $12 THEN NULL ELSE s.alert_n + 1 END
			WHERE s.ctid = (SELECT ctid FROM session WHERE whole AND room)
				AND NOT EXISTS (SELECT 1 FROM old) AND EXISTS (SELECT 1 FROM dev)
			RETURNING s.alert_n IS NULL AS dropped),`,
		values: `NULL, CAST(NULL AS INTEGER)`,
		admit:  `EXISTS (SELECT 1 FROM tally)`,
		expiry: `(SELECT expires_at FROM session)`,
		state: `COALESCE((SELECT CASE WHEN dropped THEN 0 END FROM tally),
			(SELECT CASE WHEN whole THEN 1 ELSE -1 END FROM session))`,
	}
	// rebuildQuota (QuotaRebuild) counts the window's alerts as plainQuota
	// does, from the array of their times in order, which then becomes the
	// session's ring, with the alert admitted if it was, and alert_base
	// (the window's start) after them. State: 1.
	rebuildQuota = quotaText{
		session: `session AS (SELECT expires_at FROM push_sessions WHERE token_hash = $10 AND host_fingerprint = $3)`,
		before: `
		win AS (
			SELECT COALESCE(array_agg(CAST(LEAST(created_at - $12, 2147483647) AS INTEGER) ORDER BY created_at),
				CAST('{}' AS INTEGER[])) AS t
			FROM push_events WHERE host_fingerprint = $3 AND kind = $7 AND created_at > $12),`,
		values: `NULL, cardinality(w.t) FROM win w`,
		admit:  `cardinality(w.t) < $13`,
		after: `
		ring AS (
			SELECT w.t || CASE WHEN EXISTS (SELECT 1 FROM new_event) THEN ARRAY[CAST($2 - $12 AS INTEGER)]
				ELSE CAST('{}' AS INTEGER[]) END AS t FROM win w),
		tally AS (
			UPDATE push_sessions SET alert_base = $12, alert_n = cardinality(r.t),
				alert_ring = r.t || array_fill(0, ARRAY[CAST($13 AS INTEGER) - cardinality(r.t)]),
				alert_seen = (SELECT last_value FROM push_events_uncounted)
			FROM ring r WHERE token_hash = $10 AND host_fingerprint = $3),`,
		expiry: `(SELECT expires_at FROM session)`,
		state:  `CAST(1 AS BIGINT)`,
	}
)

// ringPlace is the place in the ring of the next admission.
const ringPlace = `CAST(COALESCE(s.alert_n, 0) % CAST($13 AS INTEGER) AS INTEGER) + 1`

// ringCalm is the place in the ring of the ringUntil-th latest admission.
var ringCalm = fmt.Sprintf(`CAST((COALESCE(s.alert_n, 0) + CAST($13 AS INTEGER) - %d) %% CAST($13 AS INTEGER) AS INTEGER) + 1`, ringUntil)

// advanceRing is what ringQuota's tally does for an alert that countQuota
// admitted beside a ring ($1 the session's token hash, $2 now, $3 the
// quota): the count
// decided, and the ring takes the alert so that it stays whole. A ring not
// whole is left as it is (ringQuota rebuilds it).
const advanceRing = `UPDATE push_sessions s SET alert_ring[` + `CAST(s.alert_n % CAST($3 AS INTEGER) AS INTEGER) + 1` + `] = CAST($2 - s.alert_base AS INTEGER),
		alert_n = s.alert_n + 1
	WHERE s.token_hash = $1 AND s.alert_n >= 0 AND cardinality(s.alert_ring) = CAST($3 AS INTEGER)
		AND $2 - s.alert_base BETWEEN 0 AND 2147483647`

// sendText names one text of startSendStmt.
type sendText struct {
	dismiss, noJoin, lease, plain bool
	quota                         QuotaMode
}

// startSendText is the text of startSendStmt for a kind (open: an alert
// that may join an open batch; neither: an alert that joins none; dismiss),
// whether it reads what a lease at admission needs, and its quota's mode
// (plain: a dismissal, or an alert without a session's token): each has a
// text of its own, so that PostgreSQL starts no plan node it does not run.
func startSendText(kind contract.Kind, noJoin, lease, plain bool, mode QuotaMode) string {
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
	q := countQuota
	switch {
	case plain:
		q = plainQuota
	case mode == QuotaRing:
		q = ringQuota
	case mode == QuotaRebuild:
		q = rebuildQuota
	}
	held := ""
	if lease {
		held = heldAdmission
	}
	return fmt.Sprintf(startSendCommon, q.session, dev, q.before, q.values, q.admit, q.after, batch) + held + `SELECT a.registration_id, s.expires_at, s.state,
			COALESCE((SELECT expires_at FROM old), CAST($11 AS BIGINT)), ` + cols + `
		FROM (SELECT ` + q.expiry + ` AS expires_at, ` + q.state + ` AS state) s
			LEFT JOIN ` + recipients + ` ON TRUE`
}

// heldAdmission is heldMark for an admission that may lease (lease): the
// batches in flight of the send's registrations are marked as holding
// back the batches it opens (the holder's end then reads the batches held
// behind it), and the final row's InFlight reads the update's result,
// which leaves out a row that an end changed meanwhile (the update's
// recheck finds it no longer in flight). A send that records no recipient
// marks them all the same: a test of the recipients cost every leased
// push 10,500 instructions (scripts/pgcount -mode push -split), the mark
// an end's read of nothing.
const heldAdmission = `,
		held AS (
			` + heldMark + `= ANY(CAST($9 AS TEXT[])) AND o.host_fingerprint = $3
			RETURNING o.registration_id)
		`

// startSendTexts holds startSendText's texts, made once.
var startSendTexts = func() map[sendText]string {
	m := make(map[sendText]string)
	for _, kind := range []contract.Kind{contract.KindAlert, contract.KindDismiss} {
		for _, noJoin := range []bool{false, true} {
			for _, lease := range []bool{false, true} {
				for _, plain := range []bool{false, true} {
					for _, mode := range []QuotaMode{QuotaCount, QuotaRing, QuotaRebuild} {
						if (plain || kind == contract.KindDismiss) && mode != QuotaCount || kind == contract.KindDismiss && !plain {
							continue
						}
						m[sendText{kind == contract.KindDismiss, noJoin, lease, plain, mode}] = startSendText(kind, noJoin, lease, plain, mode)
					}
				}
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
