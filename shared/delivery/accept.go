package delivery

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
)

// outcome is what a send's transaction decided. The transaction may run
// more than once, so it fills a fresh outcome each time and the caller
// applies it only after commit.
type outcome struct {
	// statuses holds each registration's status, in request order.
	statuses []contract.Status
	// due lists the batches to hand to the scheduler.
	due []due
	// opened lists the batches to insert, in one statement at the end.
	opened []store.NewBatch
	// joined lists the open batches joined, updated in one statement at
	// the end.
	joined []store.Join
	// quota is how the host's next send should decide its quota
	// (store.SendStarted.QuotaMode).
	quota store.QuotaMode
}

// open records b to be inserted; accept inserts every opened batch at once
// and hands them to the scheduler.
func (o *outcome) open(b store.NewBatch) { o.opened = append(o.opened, b) }

// accept is reference-behaviour §4.2 for every registration of one send,
// inside one transaction under the host lock, in at most three round trips
// on PostgreSQL whatever the number of registrations:
//
//  1. the host lock, the bearer's session (when tokenHash is set),
//     the event and one recipient per registration (with the ownership,
//     quota, event, expiry and fence checks, reading each registration's
//     open batch);
//  2. only when something is left to read: why a registration got no
//     recipient, the dismissal's fence, the alert batches it may cancel;
//  3. the batches opened, joined, flushed or cancelled, with the commit.
//
// With overflow set the notification can never be delivered: only the
// session is read, and every registration reads error.
func (a *Admission) accept(ctx context.Context, tx *store.Tx, ev *event, tokenHash string, regs []string,
	overflow bool, now int64, out *outcome) error {
	// A passed expiresAt makes any deadline pass, new or stored (the
	// stored one is at most the same expiresAt, or the content differs).
	add := ev.deadline > now && !overflow
	noJoin := a.joinsNone(ev)
	start := store.SendStart{TokenHash: tokenHash, Add: add, NoJoin: noJoin, Lease: a.leases(ev), QuotaMode: a.quota.get(ev.host), Event: store.NewEvent{
		ID: ev.id, Host: ev.host, Kind: ev.kind, Fingerprint: ev.fingerprint, FormerFingerprint: ev.former, RegistrationIDs: regs,
		Deadline: ev.deadline, QuotaSince: now - contract.QuotaWindow.Milliseconds(), Quota: quota(ev.kind),
	}}
	// Each recipient is recorded with the batch it opens unless it joins
	// one (coalesceAlert): the one its receipt follows.
	for _, reg := range regs {
		start.Recipients = append(start.Recipients, store.Recipient{EventID: ev.id, RegistrationID: reg,
			Host: ev.host, Fingerprint: ev.fingerprint, FormerFingerprint: ev.former, Kind: ev.kind, Fence: ev.fenceOf(),
			BatchID: store.NewBatchID(), Joins: ev.kind == contract.KindAlert && !noJoin})
	}
	st, err := tx.StartSend(ctx, start, now)
	if err != nil {
		return err
	}
	out.quota = st.QuotaMode
	if tokenHash != "" {
		switch {
		case !st.SessionFound:
			return contract.ErrInvalidToken
		case now > st.SessionExpiresAt:
			return contract.ErrSessionExpired
		}
	}
	out.statuses = make([]contract.Status, len(regs))
	if overflow {
		for i := range regs {
			out.statuses[i] = contract.StatusError
		}
		return nil
	}
	added := func(i int) bool { return add && st.Added[i] }
	facts, err := tx.SendFacts(ctx, a.query(ev, regs, st, added), now)
	if err != nil {
		return err
	}
	return a.place(ctx, tx, ev, start.Recipients, st, facts, added, now, out)
}

// place gives each registration its status and, when it got a recipient,
// puts the notification in its batches (coalesceAlert, dismiss); then it
// inserts every batch opened, in one statement. An alert answered queued
// because a dismissal fence covers it is recorded as a dismissed recipient,
// so that its receipt says so.
func (a *Admission) place(ctx context.Context, tx *store.Tx, ev *event, recipients []store.Recipient,
	st store.SendStarted, facts store.SendFacts, added func(int) bool, now int64, out *outcome) error {
	checked, cancellable := 0, 0
	for i, r := range recipients {
		reg := r.RegistrationID
		if !added(i) {
			c := facts.Checks[checked]
			checked++
			if out.statuses[i] = refusal(c, ev, now); out.statuses[i] == contract.StatusQueued && !c.Recorded {
				if err := tx.AddDismissedRecipient(ctx, ev.id, reg, now); err != nil {
					return err
				}
			}
			continue
		}
		out.statuses[i] = contract.StatusQueued
		p := st.Pending[i]
		var err error
		if ev.kind == contract.KindAlert {
			err = a.coalesceAlert(ctx, tx, ev, r, p.Open, p.Deadline, now, out)
		} else {
			var batches []store.BatchPayload
			if p.Cancellable > 0 {
				batches = facts.Cancellable[cancellable]
				cancellable++
			}
			err = a.dismiss(ctx, tx, ev, r, batches, facts.FenceSeq, p.Deadline, now, out)
		}
		if err != nil {
			return err
		}
	}
	if err := tx.JoinBatches(ctx, out.joined); err != nil {
		return err
	}
	var leases []*Leased
	if a.leases(ev) {
		leases = a.leaseOpened(out, recipients, st, added, now)
	}
	ids, err := tx.InsertBatches(ctx, out.opened, now)
	if err != nil {
		return err
	}
	for i, id := range ids {
		b := out.opened[i]
		if b.HeldAt != 0 {
			continue // the batch in flight hands on to it when it ends
		}
		d := due{batchID: id, registrationID: b.RegistrationID, at: b.DueAt}
		if leases != nil {
			d.leased = leases[i]
		}
		out.due = append(out.due, d)
	}
	return nil
}

// leaseOpened leases, with their insert, the opened batches that a
// delivery in this request (Inline) would claim at once: due now, of a
// registration with no other batch in flight and none made due in this
// transaction. The claim is then made here, under the host lock, by the
// rules of store.ClaimBatch, and not by a transaction of its own; the
// members just passed the dismissal fences the claim would read. A batch
// due now whose registration has another in flight is marked held back
// instead, as that claim would mark it: the holder hands on to it. It
// returns the leases, one per opened batch (nil where none).
func (a *Admission) leaseOpened(out *outcome, recipients []store.Recipient, st store.SendStarted, added func(int) bool, now int64) []*Leased {
	leases := make([]*Leased, len(out.opened))
	for i := range out.opened {
		b := &out.opened[i]
		j := slices.IndexFunc(recipients, func(r store.Recipient) bool { return r.RegistrationID == b.RegistrationID })
		madeDue := slices.ContainsFunc(out.due, func(d due) bool { return d.registrationID == b.RegistrationID })
		if b.DueAt > now || j < 0 || !added(j) || madeDue {
			continue
		}
		p := st.Pending[j]
		if p.InFlight {
			b.HeldAt = now
			continue
		}
		b.LeaseToken, b.LeaseUntil = uuid.NewString(), now+contract.LeaseDuration.Milliseconds()
		leases[i] = &Leased{Token: b.LeaseToken, Device: p.Device, Batch: store.Batch{
			ID: b.ID, Host: b.Host, RegistrationID: b.RegistrationID, Kind: b.Kind, Payload: b.Payload,
			Members: b.Members, State: store.BatchPending, DueAt: b.DueAt, ExpiresAt: b.ExpiresAt,
			LeaseUntil: b.LeaseUntil, Attempts: 1, ScheduledAt: now, CreatedAt: now,
		}}
	}
	return leases
}

// leases reports whether a batch ev opens may be leased with its insert
// (leaseOpened): the scheduler delivers in the request (Inline) and the
// batch is due at once, as a dismissal's and an alert's that joins none
// are. An alert with a window whose deadline leaves no room for it is due
// at once too, and goes the way of any other batch (its claim).
func (a *Admission) leases(ev *event) bool {
	return a.leaser != nil && (ev.kind == contract.KindDismiss || a.joinsNone(ev))
}

// joinsNone reports whether ev, once accepted, joins no open batch: an
// alert with no coalescing window (a batch is joinable only while its due
// time is after now) or a sealed one (coalesceAlert). Its send then reads
// no open batch.
func (a *Admission) joinsNone(ev *event) bool {
	return ev.kind == contract.KindAlert && (a.coalesce == 0 || ev.n.Sealed())
}

// query is the second round trip of a send: the state of every
// registration that got no recipient, and for an accepted dismissal its
// fence and the cancellable batches of the registrations that have some.
func (a *Admission) query(ev *event, regs []string, st store.SendStarted, added func(int) bool) store.SendQuery {
	q := store.SendQuery{Host: ev.host, EventID: ev.id}
	for i, reg := range regs {
		switch {
		case !added(i):
			q.Check = append(q.Check, reg)
		case ev.kind == contract.KindDismiss:
			q.Fence = &store.Fence{Epoch: ev.n.Epoch, NotificationID: ev.n.NotificationID, Seq: ev.n.Seq}
			if st.Pending[i].Cancellable > 0 {
				q.Cancellable = append(q.Cancellable, reg)
			}
		}
	}
	return q
}

// refusal is the status of a registration for which no recipient was
// recorded, from what [store.Tx.CheckEvent] found: the registration's state
// first, then the event's. A live registration with the event as sent is
// queued: the pair was recorded before, or a dismissal fence drops the
// alert (decisions table: ≤ is dropped at acceptance, answered queued).
func refusal(c store.EventCheck, ev *event, now int64) contract.Status {
	switch {
	case c.Device != store.DeviceAlive:
		return deviceStatus(c.Device)
	case ev.deadline <= now:
		return contract.StatusError
	case !c.Found:
		return contract.StatusRateLimited
	case !ev.sameContent(c.Fingerprint) || c.ExpiresAt <= now:
		// Same identity with other content, or a duplicate after the
		// event's life.
		return contract.StatusError
	}
	return contract.StatusQueued
}

// quota is the per-host event budget of kind per QuotaWindow.
func quota(kind contract.Kind) int {
	if kind == contract.KindDismiss {
		return contract.DismissQuota
	}
	return contract.AlertQuota
}

// deviceStatus is the result for a registration that is not alive: error
// when the host owns no such registration, dead when a provider retired it.
func deviceStatus(d store.DeviceState) contract.Status {
	switch d {
	case store.DeviceDead:
		return contract.StatusDead
	case store.DeviceAlive:
		return contract.StatusQueued
	}
	return contract.StatusError
}
