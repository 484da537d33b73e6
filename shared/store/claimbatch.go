package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Claim is what [Store.ClaimBatch] found of a batch and did to it.
type Claim struct {
	// Batch is the batch as it stood before the claim; Batch.ID is empty
	// when there is no such batch.
	Batch Batch
	// Leased reports whether the claim took the lease; Attempts is then
	// the attempt count including this one.
	Leased   bool
	Attempts int
	// Expired reports whether the claim ended the batch as expired: it was
	// pending, unleased and at or past its deadline.
	Expired bool
	// HeldUntil is when the lease that holds a due batch back ends: its
	// own (it is in flight) or another pending batch's of its registration
	// (one delivery per registration is in flight at a time). Zero when
	// nothing holds it.
	HeldUntil int64
	// Device is the registration as it stands; Device.RegistrationID is
	// empty when it was deleted.
	Device Device
	// Fences are the host's dismissal fences of the batch's members'
	// notification ids, read when the batch was leased.
	Fences map[FenceKey]int64
	// stamped reports that the batch is pending, unleased and past its
	// deadline, with a badge stamp from an earlier attempt: the claim's
	// transaction leaves it, and ClaimBatch ends it in one of its own that
	// gives its raise back (expireStamped).
	stamped bool
}

// claimArgs are a claim's inputs.
type claimArgs struct {
	id, token       string
	now, leaseUntil int64
	expiredReason   string
}

// ClaimBatch claims batch id at now for a delivery: when it is pending, due,
// unexpired, not leased and no other pending batch of its registration is in
// flight, it leases it to token until leaseUntil and counts the attempt;
// when it is pending, unleased and at or past its deadline, it ends it as
// expired with reason expiredReason, giving back the badge raise an
// earlier attempt made (in a transaction of its own, expireStamped);
// otherwise it reports what holds it
// back, and a batch held back by another batch's lease is marked so that
// the lease holder hands on to it (Store.EndLeasedBatch). The claim reads the batch, the registration
// and, for a leased batch, the dismissal fences of its members, so a
// delivery needs no other read before its provider call.
//
// It runs under the batch's host lock: admission changes a registration's
// pending batches under that lock (it joins, flushes, cancels members), and
// two claims of one registration must not both find the other not yet in
// flight. On PostgreSQL the lock, the claim and the commit travel in one round
// trip and the claim is one statement; under load, claims that arrive
// together share that round trip and transaction, under all their hosts'
// locks (group commit, see SharedHostTx): each statement still sees the
// claims before it. SQLite runs its statements in its immediate
// transaction.
func (s *Store) ClaimBatch(ctx context.Context, id, token string, now, leaseUntil int64, expiredReason string) (Claim, error) {
	var c Claim
	on := lockOn{batch: id}
	fn := func(t *Tx) error {
		var err error
		c, err = s.dialect.claim(ctx, t, claimArgs{id: id, token: token, now: now, leaseUntil: leaseUntil,
			expiredReason: expiredReason})
		return err
	}
	alone := func(wait string) error { return s.transact(ctx, lockOn{batch: id, wait: wait}, fn) }
	var err error
	if s.claims == nil {
		err = alone("")
	} else {
		err = s.claims.do(&groupCall{ctx: ctx, on: on, fn: fn, alone: alone})
	}
	if err == nil && c.stamped {
		// Ended apart, so that the claim's statement, which every
		// delivery runs, carries no give-back; should this fail, the
		// batch stays pending past its deadline for the sweep to end
		// (ExpireOverdue), its raise given back all the same.
		c.Expired, err = s.expireStamped(ctx, id, expiredReason, now)
	}
	if err != nil {
		return Claim{}, fmt.Errorf("claim batch: %w", err)
	}
	return c, nil
}

// claimInTx is the claim as a sequence of statements, decided in Go: the
// SQLite dialect's. The rules are those of the PostgreSQL statement
// (postgresClaim), and the store tests hold both to them.
func claimInTx(ctx context.Context, t *Tx, a claimArgs) (Claim, error) {
	v, err := t.ClaimView(ctx, a.id, a.now)
	if errors.Is(err, ErrNoRow) {
		return Claim{}, nil
	}
	if err != nil {
		return Claim{}, err
	}
	c := Claim{Batch: v.Batch, Device: v.Device}
	b := v.Batch
	switch {
	case b.State != BatchPending:
		return c, nil
	case b.LeaseUntil > a.now:
		c.HeldUntil = b.LeaseUntil
		return c, nil
	case b.ExpiresAt <= a.now && b.Badge > 0:
		c.stamped = true // left for ClaimBatch to end, settling its raise
		return c, nil
	case b.ExpiresAt <= a.now:
		c.Expired, err = t.EndBatch(ctx, b.ID, BatchExpired, a.expiredReason, a.now)
		return c, err
	case b.DueAt > a.now:
		return c, nil
	case v.LeasedUntil > 0:
		c.HeldUntil = v.LeasedUntil
		return c, nil
	}
	if v.HostFenced {
		if c.Fences, err = t.Fences(ctx, b.Host, memberIDs(b.Payload)); err != nil {
			return Claim{}, err
		}
	}
	if c.Attempts, err = t.LeaseBatch(ctx, b.ID, a.token, a.leaseUntil); err != nil {
		return Claim{}, err
	}
	c.Leased = true
	return c, nil
}

// memberIDs returns the notificationIds of a batch's members (the JSON array
// of payload); a member without one is skipped.
func memberIDs(payload string) []string {
	var members []struct {
		NotificationID string `json:"notificationId"`
	}
	if json.Unmarshal([]byte(payload), &members) != nil {
		return nil
	}
	ids := make([]string, 0, len(members))
	for _, m := range members {
		if m.NotificationID != "" {
			ids = append(ids, m.NotificationID)
		}
	}
	return ids
}

// SetLeasedMembers replaces the members of batch id, leased to token, with
// payload (members long, at least one), and records the recipients of
// registrationID for the dropped events (eventIDs) as dismissed: a delivery
// that dropped members a dismissal fenced. Both go in one transaction, one
// round trip on PostgreSQL. A stale holder changes no member; the dropped
// events are dismissed whoever holds the batch, since a fence only rises.
// The part of the batch's badge raise the dropped members made is given
// back (at most members stay counted), with the same round trip.
func (s *Store) SetLeasedMembers(ctx context.Context, id, token, registrationID, payload string, members int,
	eventIDs []string, now int64) error {
	err := s.Tx(ctx, func(t *Tx) error {
		if err := t.DismissRecipients(ctx, registrationID, eventIDs, now); err != nil {
			return err
		}
		if err := t.lowerRaise(ctx, id, members, BatchPending); err != nil {
			return err
		}
		var n int
		err := t.r.final(ctx, `UPDATE push_delivery_batches SET payload_json = $3, members = $4
			WHERE batch_id = $1 AND state = 'pending' AND lease_token = $2 RETURNING 1`,
			id, token, payload, members).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set leased members: %w", err)
	}
	return nil
}
