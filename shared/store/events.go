package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"onorca.dev/push/shared/contract"
)

// NewEvent is a logical event that /v1/send records the first time it sees
// its identity (reference-behaviour §4.2).
type NewEvent struct {
	// ID is the event identity's hash; Host the sending host.
	ID   string
	Host string
	// Kind is the effective kind; each kind has its own quota.
	Kind contract.Kind
	// Fingerprint is the content hash a duplicate must match, or else
	// FormerFingerprint, the content hash as events stored before keyed
	// digests kept it (issue 30): the new event is stored with Fingerprint.
	Fingerprint       string
	FormerFingerprint string
	// RegistrationIDs are the registrations being served: the event is
	// only recorded when one of them is a live registration of Host, so a
	// send to unknown or dead ones spends no quota.
	RegistrationIDs []string
	// Deadline is the event's expiry in epoch milliseconds.
	Deadline int64
	// QuotaSince and Quota bound the host's events of Kind: the event is
	// recorded only while fewer than Quota have created_at > QuotaSince.
	QuotaSince int64
	Quota      int
}

// InsertEvent records e at now. It records nothing when an event with e.ID
// already exists, when none of e.RegistrationIDs is a live registration of
// e.Host, or when the host's quota for e.Kind is spent; [Tx.CheckEvent]
// tells these apart. It is a later write: on PostgreSQL it travels with the
// next statement, which sees its effect. Run it under [Store.HostTx]: the
// host lock makes its count-then-insert exact.
func (t *Tx) InsertEvent(ctx context.Context, e NewEvent, now int64) error {
	s := insertEventStmt(e, now)
	if err := t.later(ctx, s.op, s.query, s.args...); err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	return nil
}

// insertEventStmt is InsertEvent's statement.
func insertEventStmt(e NewEvent, now int64) statement {
	args := []any{e.ID, e.Host, string(e.Kind), e.Fingerprint, now, e.Deadline, e.QuotaSince, e.Quota}
	return statement{op: "insert event", query: `INSERT INTO push_events
		(event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
		SELECT $1, $2, $3, $4, CAST($5 AS BIGINT), CAST($6 AS BIGINT)
		WHERE EXISTS (SELECT 1 FROM push_devices
				WHERE registration_id IN (` + placeholders(len(args)+1, len(e.RegistrationIDs)) + `)
					AND host_fingerprint = $2 AND dead_at IS NULL)
			AND (SELECT COUNT(*) FROM push_events
				WHERE host_fingerprint = $2 AND kind = $3 AND created_at > $7) < $8
		ON CONFLICT (event_id) DO NOTHING`, args: appendStrings(args, e.RegistrationIDs)}
}

// placeholders returns n placeholders numbered from first: "$3, $4".
func placeholders(first, n int) string {
	b := make([]byte, 0, 5*n)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(first+i), 10)
	}
	return string(b)
}

// appendStrings appends ss to args.
func appendStrings(args []any, ss []string) []any {
	for _, s := range ss {
		args = append(args, s)
	}
	return args
}

// DeviceState is what a host's send finds for one registration id.
type DeviceState int

// The device states.
const (
	// DeviceUnknown: no registration of this host has the id.
	DeviceUnknown DeviceState = iota
	// DeviceAlive: the host's registration, not marked dead.
	DeviceAlive
	// DeviceDead: the host's registration, marked dead by a provider.
	DeviceDead
)

// EventCheck is what [Tx.CheckEvent] found.
type EventCheck struct {
	// Device is the registration's state for the host.
	Device DeviceState
	// Found reports whether the event exists; Fingerprint and ExpiresAt
	// are its stored content hash and deadline.
	Found       bool
	Fingerprint string
	ExpiresAt   int64
	// Recorded reports whether the recipient (event, registration) is
	// recorded: an accepted duplicate, not an alert a fence dropped.
	Recorded bool
}

// CheckEvent reads the state of the host's registration and of the event
// eventID in one statement: the reasons [Tx.InsertEvent] or
// [Tx.AddRecipient] recorded nothing.
func (t *Tx) CheckEvent(ctx context.Context, host, registrationID, eventID string) (EventCheck, error) {
	s := checkEventStmt(host, registrationID, eventID)
	return scanEventCheck(t.r.queryRow(ctx, s.query, s.args...))
}

// checkEventStmt is CheckEvent's statement.
func checkEventStmt(host, registrationID, eventID string) statement {
	return statement{op: "check event", query: `SELECT
		(SELECT dead_at IS NOT NULL FROM push_devices WHERE registration_id = $1 AND host_fingerprint = $2),
		(SELECT fingerprint FROM push_events WHERE event_id = $3),
		(SELECT expires_at FROM push_events WHERE event_id = $3),
		(SELECT COUNT(*) FROM push_event_recipients WHERE event_id = $3 AND registration_id = $1)`,
		args: []any{registrationID, host, eventID}}
}

// scanEventCheck reads CheckEvent's row.
func scanEventCheck(row scanner) (EventCheck, error) {
	var dead sql.NullBool
	var fp sql.NullString
	var expires sql.NullInt64
	var recorded int
	if err := row.Scan(&dead, &fp, &expires, &recorded); err != nil {
		return EventCheck{}, fmt.Errorf("check event: %w", err)
	}
	c := EventCheck{Found: fp.Valid, Fingerprint: fp.String, ExpiresAt: expires.Int64, Recorded: recorded > 0}
	switch {
	case !dead.Valid:
		c.Device = DeviceUnknown
	case dead.Bool:
		c.Device = DeviceDead
	default:
		c.Device = DeviceAlive
	}
	return c, nil
}
