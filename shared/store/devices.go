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
}

// RegisterDevice upserts the host's registration for r.DeviceID: a new token
// replaces the old one and clears dead. It returns
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
		err := tx.tx.QueryRowContext(ctx, `SELECT
			COUNT(*) FILTER (WHERE device_id = $2), COUNT(*)
			FROM push_devices WHERE host_fingerprint = $1`, host, r.DeviceID).Scan(&existing, &total)
		if err != nil {
			return fmt.Errorf("count devices: %w", err)
		}
		if existing == 0 && total >= contract.MaxDevicesPerHost {
			return contract.ErrTooManyDevices
		}
		return tx.tx.QueryRowContext(ctx, `INSERT INTO push_devices
			(registration_id, host_fingerprint, device_id, platform, token, apns_environment, filter_json,
			 dead_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $8)
			ON CONFLICT (host_fingerprint, device_id) DO UPDATE SET
				platform = excluded.platform, token = excluded.token,
				apns_environment = excluded.apns_environment, filter_json = excluded.filter_json,
				dead_at = NULL, updated_at = excluded.updated_at
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
		ORDER BY created_at, registration_id LIMIT $2`, host, contract.MaxListedDevices)
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

// DeleteDevice deletes the host's registration. It returns
// contract.ErrNotFound when the host owns no such registration.
func (s *Store) DeleteDevice(ctx context.Context, host, registrationID string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM push_devices WHERE registration_id = $1 AND host_fingerprint = $2`,
		registrationID, host)
	if err != nil {
		return fmt.Errorf("delete device: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete device: %w", err)
	} else if n == 0 {
		return contract.ErrNotFound
	}
	return nil
}

// Device reads one registration by id; ErrNoRow when there is none.
func (s *Store) Device(ctx context.Context, registrationID string) (Device, error) {
	var d Device
	var env sql.NullString
	var dead sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT registration_id, host_fingerprint, device_id, platform, token,
		apns_environment, dead_at FROM push_devices WHERE registration_id = $1`, registrationID).
		Scan(&d.RegistrationID, &d.HostFingerprint, &d.DeviceID, &d.Platform, &d.Token, &env, &dead)
	if errors.Is(err, sql.ErrNoRows) {
		return Device{}, ErrNoRow
	}
	if err != nil {
		return Device{}, fmt.Errorf("read device: %w", err)
	}
	d.APNSEnvironment = contract.APNSEnvironment(env.String)
	d.Dead = dead.Valid
	return d, nil
}
