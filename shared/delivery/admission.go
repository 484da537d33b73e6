package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
)

// scheduleFanOut bounds the Schedule calls in flight for one request: a
// request of 20 registrations may hand over 40 batches (style.md §7.4).
const scheduleFanOut = 8

// ErrBadOptions is returned by [NewAdmission] when a dependency is missing or
// the coalescing window is out of range.
var ErrBadOptions = errors.New("delivery: invalid options")

// Options configures an [Admission]. Every field is required; a zero
// Coalesce is a valid window (no coalescing).
type Options struct {
	Store    *store.Store
	Clock    clock.Clock
	Counters *obs.Counters
	// Scheduler receives the new and newly-due batches after commit.
	Scheduler Scheduler
	// Coalesce is the window an alert batch stays open from its first
	// alert (ORCA_PUSH_COALESCE_MS), 0..contract.MaxCoalesce.
	Coalesce time.Duration
	// Keys seals what batches store (ORCA_PUSH_PAYLOAD_KEYS); the
	// Deliverer opens it with the same ring.
	Keys *seal.Ring
	// Digest keys the content digest events keep (ORCA_PUSH_DIGEST_KEY).
	Digest *seal.DigestKey
	// Budget bounds how long one request's hand-over to Scheduler may
	// wait after commit: the deadline of the ctx its Schedule calls share
	// (InlineBudget with Inline, which stops delivering at it). Zero sets
	// none, for a scheduler that only makes tasks (which bounds its own
	// calls).
	Budget time.Duration
}

// Admission accepts sends: POST /v1/send after decoding and authentication.
// It is safe for concurrent use, also across processes sharing a database.
type Admission struct {
	store     *store.Store
	clock     clock.Clock
	counters  *obs.Counters
	scheduler Scheduler
	// leaser is scheduler when it delivers in the request (Inline): a
	// batch due at once is then leased with its insert (leaseOpened).
	leaser   leaser
	coalesce int64 // milliseconds
	budget   time.Duration
	payloads payloads
	digest   *seal.DigestKey
	// quota is each busy host's store.QuotaMode, from its last send.
	quota quotaModes
}

// NewAdmission returns an Admission; it returns ErrBadOptions when a
// dependency is missing or Coalesce is out of range.
func NewAdmission(o Options) (*Admission, error) {
	if o.Store == nil || o.Clock == nil || o.Counters == nil || o.Scheduler == nil || o.Keys == nil || o.Digest == nil {
		return nil, fmt.Errorf("%w: Store, Clock, Counters, Scheduler, Keys and Digest are required", ErrBadOptions)
	}
	if o.Coalesce < 0 || o.Coalesce > contract.MaxCoalesce {
		return nil, fmt.Errorf("%w: Coalesce out of range", ErrBadOptions)
	}
	if o.Budget < 0 {
		return nil, fmt.Errorf("%w: Budget below zero", ErrBadOptions)
	}
	l, _ := o.Scheduler.(leaser)
	return &Admission{store: o.Store, clock: o.Clock, counters: o.Counters, scheduler: o.Scheduler, leaser: l,
		coalesce: o.Coalesce.Milliseconds(), budget: o.Budget, payloads: payloads{o.Keys}, digest: o.Digest}, nil
}

// due is a batch of a registration to hand to the scheduler, due at epoch
// milliseconds.
type due struct {
	batchID, registrationID string
	at                      int64
	// leased, when set, is the batch as admission leased it, for the
	// scheduler to deliver (leaser).
	leased *Leased
}

// Send admits req from host (reference-behaviour §4.2 for every
// registration): one transaction under the host lock records the event once
// and each registration's recipient, fence, quota and coalescing work, in at
// most three round trips on PostgreSQL whatever the number of registrations.
// Under load, other hosts' sends share that transaction and its round trips
// (store.Store.SharedHostTx: group commit).
// The results come back in the request's de-duplicated order with the
// statuses of §4.7: a registration not owned by host is error, a dead one
// dead; a new event over its kind's quota is rate_limited. After commit the
// new and newly-due batches go to the scheduler, whose failures are counted,
// not returned.
//
// An error means the database failed: nothing is committed, and the host's
// retry of the same request is admitted as if it were the first (the
// request's identity is its event's).
func (a *Admission) Send(ctx context.Context, host string, req contract.SendRequest) ([]contract.SendResult, error) {
	return a.send(ctx, host, "", req)
}

// SendAs is [Admission.Send] for a request that came with the bearer token
// whose hash is tokenHash: the transaction's first statement reads its
// session, so a session revoked, replaced or expired since the edge last saw
// it is refused as the edge refuses it, with contract.ErrInvalidToken or
// contract.ErrSessionExpired, and nothing is written.
func (a *Admission) SendAs(ctx context.Context, host, tokenHash string, req contract.SendRequest) ([]contract.SendResult, error) {
	return a.send(ctx, host, tokenHash, req)
}

func (a *Admission) send(ctx context.Context, host, tokenHash string, req contract.SendRequest) ([]contract.SendResult, error) {
	now := a.clock.Now().UnixMilli()
	ev := newEvent(host, &req.Notification, now, a.digest)
	// A notification within the contract's 3000 bytes can still overflow a
	// provider's 4 KB once apns2 and the firebase SDK escape '<', '>', '&',
	// U+2028 and U+2029 as six bytes each: it could only ever fail at the
	// provider, so nothing is written and every registration reads error.
	overflow := mayOverflow(ev.item) && !fits(host, []contract.Notification{req.Notification}, ev.deadline)
	var out outcome
	err := a.store.SharedHostTx(ctx, host, func(tx *store.Tx) error {
		out = outcome{}
		return a.accept(ctx, tx, ev, tokenHash, req.RegistrationIDs, overflow, now, &out)
	})
	if err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	a.quota.set(host, out.quota)
	a.schedule(ctx, out.due)
	results := make([]contract.SendResult, len(req.RegistrationIDs))
	for i, id := range req.RegistrationIDs {
		a.counters.Inc(statusCounter(out.statuses[i]))
		results[i] = contract.SendResult{RegistrationID: id, Status: out.statuses[i]}
	}
	return results, nil
}

// statusCounter names the counter of a send status (reference-behaviour §9).
func statusCounter(s contract.Status) string {
	switch s {
	case contract.StatusQueued:
		return obs.SendQueued
	case contract.StatusDead:
		return obs.SendDead
	case contract.StatusRateLimited:
		return obs.SendRateLimited
	}
	return obs.SendError
}

// schedule hands the batches to the scheduler, a few at a time, within the
// request's budget. It runs after commit and outlives a client that went
// away: the rows are committed, and a task now spares waiting for the
// sweep.
func (a *Admission) schedule(ctx context.Context, batches []due) {
	if len(batches) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if a.budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.budget)
		defer cancel()
	}
	var g errgroup.Group
	g.SetLimit(scheduleFanOut)
	for _, b := range batches {
		g.Go(func() error {
			var err error
			if b.leased != nil {
				err = a.leaser.ScheduleLeased(ctx, *b.leased)
			} else {
				err = a.scheduler.Schedule(ctx, b.batchID, b.registrationID, time.UnixMilli(b.at), "")
			}
			if err != nil {
				a.counters.Inc(obs.ScheduleFailed)
			}
			return nil
		})
	}
	g.Wait()
}

// mayOverflow reports whether a single notification's provider payloads could
// pass contract.MaxProviderPayload: only when its JSON holds a character the
// Go encoders escape to six bytes ('<', '>', '&', U+2028, U+2029). Without
// one, a notification within the contract's limit always fits (the
// providers' property test measures the worst case at 3297 bytes), so the
// common send skips building both payloads.
//
// It looks at the bytes, not the runes: U+2028 and U+2029 are E2 80 A8 and
// E2 80 A9 in UTF-8 (bytes.ContainsAny decodes every rune of item to test a
// set that has some beyond ASCII, a few percent of a send's CPU).
func mayOverflow(item []byte) bool {
	for i, c := range item {
		switch {
		case c == '<' || c == '>' || c == '&':
			return true
		case c == 0xe2 && i+2 < len(item) && item[i+1] == 0x80 && (item[i+2] == 0xa8 || item[i+2] == 0xa9):
			return true
		}
	}
	return false
}
