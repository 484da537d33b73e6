package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"onorca.dev/push/shared/contract"
)

// Device is a stored registration.
type Device struct {
	RegistrationID  string
	HostFingerprint string
	DeviceID        string
	Platform        contract.Platform
	Token           string
	APNSEnvironment contract.APNSEnvironment
	Dead            bool
	// Badged reports whether the registration's host ever set its badge
	// (Store.SetBadge); Badge is then its count. Read by the claim and by
	// Store.Device.
	Badged bool
	Badge  int64
}

// RegisterDevice upserts the host's registration for r.DeviceID: a new token
// replaces the old one, clears dead and sets a badge back to 0 (it stays
// opted in; the same token keeps its count), a new badge epoch (see
// Store.SetBadge). It returns
// contract.ErrTooManyDevices when the host already has MaxDevicesPerHost
// other devices. It runs under the host lock, so the cap holds under
// concurrency.
func (s *Store) RegisterDevice(ctx context.Context, host string, r contract.RegisterRequest, now int64) (string, error) {
	var filter sql.NullString
	if r.Filter != nil {
		b, err := json.Marshal(r.Filter)
		if err != nil {
			return "", fmt.Errorf("register device: %w", err)
		}
		filter = sql.NullString{String: string(b), Valid: true}
	}
	env := sql.NullString{String: string(r.APNSEnvironment), Valid: r.APNSEnvironment != ""}
	var id string
	err := s.HostTx(ctx, host, func(tx *Tx) error {
		var existing, total int
		err := tx.r.queryRow(ctx, `SELECT
			COUNT(*) FILTER (WHERE device_id = $2), COUNT(*)
			FROM push_devices WHERE host_fingerprint = $1`, host, r.DeviceID).Scan(&existing, &total)
		if err != nil {
			return fmt.Errorf("count devices: %w", err)
		}
		if existing == 0 && total >= contract.MaxDevicesPerHost {
			return contract.ErrTooManyDevices
		}
		return tx.r.queryRow(ctx, `INSERT INTO push_devices
			(registration_id, host_fingerprint, device_id, platform, token, apns_environment, filter_json,
			 dead_at, created_at, created_seq, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8,
				(SELECT COALESCE(MAX(created_seq), 0) + 1 FROM push_devices WHERE host_fingerprint = $2), $8)
			ON CONFLICT (host_fingerprint, device_id) DO UPDATE SET
				platform = excluded.platform, token = excluded.token,
				apns_environment = excluded.apns_environment, filter_json = excluded.filter_json,
				dead_at = NULL, updated_at = excluded.updated_at,
				badge_count = CASE WHEN push_devices.token = excluded.token THEN push_devices.badge_count
					WHEN push_devices.badge_count IS NULL THEN NULL ELSE 0 END,
				badge_epoch = CASE WHEN push_devices.token = excluded.token THEN push_devices.badge_epoch
					ELSE push_devices.badge_epoch + 1 END
			RETURNING registration_id`,
			uuid.NewString(), host, r.DeviceID, string(r.Platform), r.Token, env, filter, now).Scan(&id)
	})
	if err != nil {
		return "", fmt.Errorf("register device: %w", err)
	}
	return id, nil
}

// Devices lists the host's registrations in creation order, at most
// MaxListedDevices.
func (s *Store) Devices(ctx context.Context, host string) ([]contract.Device, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT registration_id, device_id, platform, dead_at IS NOT NULL
		FROM push_devices WHERE host_fingerprint = $1
		ORDER BY created_seq LIMIT $2`, host, contract.MaxListedDevices)
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	defer rows.Close()
	out := []contract.Device{}
	for rows.Next() {
		var d contract.Device
		if err := rows.Scan(&d.RegistrationID, &d.DeviceID, &d.Platform, &d.Dead); err != nil {
			return nil, fmt.Errorf("list devices: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	return out, nil
}

// DeleteDevice deletes the host's registration at now and ends its pending
// batches that no delivery holds as dropped, clearing their payloads: their
// recipients' receipts read dropped from then on. A batch in flight ends as
// its delivery decides; one that comes back pending is dropped at its next
// claim. It returns contract.ErrNotFound when the host owns no such
// registration. It runs under the host lock, as admission does, so no send
// adds a batch for the registration while it goes.
func (s *Store) DeleteDevice(ctx context.Context, host, registrationID string, now int64) error {
	err := s.HostTx(ctx, host, func(t *Tx) error {
		// The batches go first and the delete carries the commit, one round
		// trip on PostgreSQL. When the host owns no such registration, the
		// first write can only find batches of a registration deleted
		// before, which were in flight then and came back pending: they
		// are dropped as their next claim would drop them.
		err := t.later(ctx, "drop batches", `UPDATE push_delivery_batches
			SET state = $3, payload_json = $4, finished_at = $5, lease_token = NULL, lease_until = 0
			WHERE registration_id = $1 AND host_fingerprint = $2 AND state = 'pending' AND lease_until <= $5`,
			registrationID, host, string(BatchDropped), EmptyPayload, now)
		if err != nil {
			return err
		}
		var id string
		err = t.r.final(ctx, `DELETE FROM push_devices WHERE registration_id = $1 AND host_fingerprint = $2
			RETURNING registration_id`, registrationID, host).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return contract.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete device: %w", err)
	}
	return nil
}

// SetBadge sets the badge of the host's registration to count, opting it in
// (contract "badge"): from then on every alert push raises it by the number
// of notifications it carries. The count starts a new badge epoch: a push
// raised before it gives nothing back when it ends unsent, for the count
// is now the phone's own. It returns contract.ErrNotFound, changing
// nothing, when the host owns no such registration.
func (s *Store) SetBadge(ctx context.Context, host, registrationID string, count int64, now int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE push_devices SET badge_count = $3, badge_epoch = badge_epoch + 1, updated_at = $4
		WHERE registration_id = $1 AND host_fingerprint = $2`, registrationID, host, count, now)
	if err != nil {
		return fmt.Errorf("set badge: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("set badge: %w", err)
	}
	if n == 0 {
		return contract.ErrNotFound
	}
	return nil
}

// Device reads one registration by id; ErrNoRow when there is none.
func (s *Store) Device(ctx context.Context, registrationID string) (Device, error) {
	var d Device
	var env sql.NullString
	var dead sql.NullInt64
	var badge sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT registration_id, host_fingerprint, device_id, platform, token,
		apns_environment, dead_at, badge_count FROM push_devices WHERE registration_id = $1`, registrationID).
		Scan(&d.RegistrationID, &d.HostFingerprint, &d.DeviceID, &d.Platform, &d.Token, &env, &dead, &badge)
	if errors.Is(err, sql.ErrNoRows) {
		return Device{}, ErrNoRow
	}
	if err != nil {
		return Device{}, fmt.Errorf("read device: %w", err)
	}
	d.APNSEnvironment = contract.APNSEnvironment(env.String)
	d.Dead = dead.Valid
	d.Badged, d.Badge = badge.Valid, badge.Int64
	return d, nil
}

// MarkDeviceDead marks d's registration dead, but only while its token,
// platform and APNs environment are still the ones d was read with: a token
// refreshed by re-registration during a send is not retired
// (reference-behaviour §6). It reports whether the row changed.
func (s *Store) MarkDeviceDead(ctx context.Context, d Device, now int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE push_devices SET dead_at = $1, updated_at = $1
		WHERE registration_id = $2 AND token = $3 AND platform = $4
			AND COALESCE(apns_environment, '') = $5 AND dead_at IS NULL`,
		now, d.RegistrationID, d.Token, string(d.Platform), string(d.APNSEnvironment))
	if err != nil {
		return false, fmt.Errorf("mark device dead: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("mark device dead: %w", err)
	}
	return n == 1, nil
}
