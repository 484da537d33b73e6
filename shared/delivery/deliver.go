package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store"
)

// Provider sends one message to one device and classifies the answer. The
// APNs and FCM clients of package providers implement it.
type Provider interface {
	Send(ctx context.Context, t push.Target, m push.Message) push.Outcome
}

// DelivererOptions configures a [Deliverer]; every field is required.
type DelivererOptions struct {
	Store     *store.Store
	Clock     clock.Clock
	Counters  *obs.Counters
	Scheduler Scheduler
	APNS      Provider
	FCM       Provider
	// Keys opens what batches store (ORCA_PUSH_PAYLOAD_KEYS), the ring
	// admission sealed it with, and seals the members a claim keeps.
	Keys *seal.Ring
}

// Deliverer delivers one batch per call: the work of the deliver function,
// which Cloud Tasks calls at each batch's due time.
type Deliverer struct {
	store     *store.Store
	clock     clock.Clock
	counters  *obs.Counters
	scheduler Scheduler
	apns, fcm Provider
	payloads  payloads
	// halted ends when Halt is called; halt calls it.
	halted context.Context
	halt   context.CancelFunc
}

// recordTimeout bounds the statements that record a delivery's outcome. They
// run even when the request that started the delivery was cancelled (a
// shutdown, a dispatch deadline): a provider call that was made must be
// recorded, or its lease stays held until it runs out.
const recordTimeout = 5 * time.Second

// NewDeliverer returns a Deliverer, or ErrBadOptions when a dependency is
// missing.
func NewDeliverer(o DelivererOptions) (*Deliverer, error) {
	if o.Store == nil || o.Clock == nil || o.Counters == nil || o.Scheduler == nil || o.APNS == nil || o.FCM == nil || o.Keys == nil {
		return nil, fmt.Errorf("%w: Store, Clock, Counters, Scheduler, APNS, FCM and Keys are required", ErrBadOptions)
	}
	d := &Deliverer{store: o.Store, clock: o.Clock, counters: o.Counters, scheduler: o.Scheduler, apns: o.APNS, fcm: o.FCM,
		payloads: payloads{o.Keys}}
	d.halted, d.halt = context.WithCancel(context.Background())
	return d, nil
}

// Halt cuts short the provider calls in flight, for a process that must
// exit: each ends as a retryable failure, which its delivery records (the
// lease is released and the batch retried later), instead of dying with the
// process and leaving its lease held. Deliveries that start afterwards fail
// their provider call at once the same way; the caller has stopped taking
// requests first.
func (d *Deliverer) Halt() { d.halt() }

// registrationUnavailable is the reason a batch ends dead without a provider
// call when its registration was marked dead (reference-behaviour §6). One
// whose registration was deleted ends dropped instead, as its receipts say.
const registrationUnavailable = "registration_unavailable"

// payloadKeyUnknown is the reason a batch ends expired without a provider
// call when a member does not open under the key of the ring its id names
// (its bytes changed), or its deadline came while no instance that claimed
// it held that key (rotation.go): it can never be delivered.
const payloadKeyUnknown = "payload_key_unknown"

// claimed is a batch this call holds the lease of.
type claimed struct {
	batch    store.Batch
	token    string
	attempts int
	members  []contract.Notification
	// device is the registration as read at the claim; empty
	// RegistrationID when it was deleted.
	device store.Device
	// raised reports whether the batch raised its registration's badge
	// (at this attempt or an earlier one): a batch that ends unsent then
	// gives the raise back.
	raised bool
	// handedOn reports whether the end of the lease before it handed on
	// to the batch (handOn): its phone is in a burst, and its end marks
	// the batches held back behind it (store.MarkHeldBack).
	handedOn bool
}

// Deliver claims batchID, sends it, and records the outcome; then it hands
// on: while ChainBudget lasts, it claims and delivers, one after the other,
// the batches of the same registration that fell due while it held the lease
// (handOn). A task that arrives early, late, twice, or for a finished or
// held-back batch returns nil and does nothing. An error means the database
// failed: the caller answers non-2xx so that Cloud Tasks retries, and the
// lease stops a double send.
func (d *Deliverer) Deliver(ctx context.Context, batchID string) error {
	ctx, cancel := context.WithTimeout(ctx, ChainBudget)
	defer cancel()
	c, _, err := d.claim(ctx, batchID)
	for err == nil && c != nil {
		c, err = d.deliver(ctx, c)
	}
	return err
}

// ChainBudget bounds how long one deliver request goes on handing on to a
// registration's next batch: half the deliver function's 30 s dispatch
// deadline (tasks.DefaultDispatchDeadline), leaving room for the outcome of
// a provider call it cuts short to be recorded (recordTimeout). A lone
// delivery never meets it: its one provider call ends within
// contract.ProviderTimeout. What is left when it runs out goes to one task
// (handOn).
const ChainBudget = 15 * time.Second

// deliver sends the claimed batch c and records the outcome; it returns the
// registration's next batch when it handed on to it (claimed, to deliver
// next), or nil.
func (d *Deliverer) deliver(ctx context.Context, c *claimed) (*claimed, error) {
	dev := c.device
	switch {
	case dev.RegistrationID == "":
		// Deleted while the batch was in flight (DeleteDevice drops the
		// others at once).
		d.counters.Inc(obs.DeliveryDropped)
		return d.finish(ctx, c, store.BatchDropped, "")
	case dev.Dead:
		return d.finish(ctx, c, store.BatchDead, registrationUnavailable)
	}
	if c.attempts > 1 {
		d.counters.Inc(obs.DeliveryRetry)
	}
	msg := push.Build(c.batch.Host, c.members, c.batch.ExpiresAt)
	if msg.Kind != contract.KindDismiss && dev.Badged {
		db, cancel := recording(ctx) // a stamp is not cut short by the budget
		var err error
		msg.Badge, err = d.badge(db, c)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("deliver: %w", err)
		}
		if !fitsMessage(msg) {
			msg.Badge = 0 // the alert goes, without its badge, rather than not at all
		}
	}
	target := push.Target{Platform: dev.Platform, Token: dev.Token, APNSEnvironment: dev.APNSEnvironment}
	provider := d.fcm
	if dev.Platform == contract.PlatformIOS {
		provider = d.apns
	}
	d.counters.Inc(obs.DeliveryLate(sinceMillis(d.clock, c.batch.DueAt)))
	out := d.send(ctx, provider, target, msg)
	if credentialReasons[dev.Platform][out.Reason] {
		d.counters.Inc(credentialCounter[dev.Platform])
	}
	switch out.Kind {
	case push.Sent:
		d.counters.Inc(obs.DeliverySent)
		if c.batch.Kind == contract.KindAlert {
			// The batch opened when its oldest alert was accepted.
			d.counters.Inc(obs.AlertLatency(sinceMillis(d.clock, c.batch.CreatedAt)))
		}
		return d.finish(ctx, c, store.BatchSent, "")
	case push.Dead:
		d.counters.Inc(obs.DeliveryDead)
		rec, cancel := recording(ctx)
		defer cancel()
		if _, err := d.store.MarkDeviceDead(rec, dev, d.clock.Now().UnixMilli()); err != nil {
			return nil, fmt.Errorf("deliver: %w", err)
		}
		return d.finish(ctx, c, store.BatchDead, out.Reason)
	case push.Retry:
		d.counters.Inc(obs.DeliveryError)
		return d.retry(ctx, c, out)
	default:
		d.counters.Inc(obs.DeliveryError)
		if out.Reason == push.ReasonExpired {
			return d.finish(ctx, c, store.BatchExpired, out.Reason)
		}
		return d.finish(ctx, c, store.BatchError, out.Reason)
	}
}

// recording is ctx for the statements that record a delivery's outcome:
// what the provider answered is recorded whatever became of the request or
// its budget meanwhile, within recordTimeout.
func recording(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}

// credentialReasons are, per platform, the providers' reasons (push.Outcome
// carries their own codes) that refuse the gateway's credentials rather
// than the device's token: APNs 403 with a provider-token or certificate
// reason (Apple, "Handling notification responses from APNs"), FCM 401
// UNAUTHENTICATED and 403 PERMISSION_DENIED (FCM v1 ErrorCode). An
// operator must act on each: they are counted apart.
var credentialReasons = map[contract.Platform]map[string]bool{
	contract.PlatformIOS: {
		"InvalidProviderToken": true, "ExpiredProviderToken": true, "MissingProviderToken": true,
		"BadCertificate": true, "BadCertificateEnvironment": true, "Forbidden": true,
	},
	contract.PlatformAndroid: {"UNAUTHENTICATED": true, "PERMISSION_DENIED": true},
}

// credentialCounter is the counter of credentialReasons per platform.
var credentialCounter = map[contract.Platform]string{
	contract.PlatformIOS:     obs.APNSCredentialsRejected,
	contract.PlatformAndroid: obs.FCMCredentialsRejected,
}

// sinceMillis is how long ago, by clk, the epoch-millisecond time at was.
func sinceMillis(clk clock.Clock, at int64) time.Duration {
	return time.Duration(clk.Now().UnixMilli()-at) * time.Millisecond
}

// badge is the number an alert batch of a registration with a badge
// carries: the registration's count as it stands, read with the claim, so
// that a retry never sets the icon back below a newer push's number, the
// phone's own reset or a new token's 0. At its first attempt the count is
// first raised by the notifications the batch carries, never past
// contract.MaxBadge, and the raise recorded with the batch
// (store.StampBadge), so that the count moves once per push, not per
// attempt, and a push that ends unsent can give it back (finish).
func (d *Deliverer) badge(ctx context.Context, c *claimed) (int64, error) {
	if c.batch.Badge > 0 {
		c.raised = true
		return min(c.device.Badge, contract.MaxBadge), nil
	}
	n, err := d.store.StampBadge(ctx, c.batch.ID, c.token, c.batch.RegistrationID, len(c.members))
	c.raised = n > 0
	return n, err
}

// send makes the provider call, cut short by Halt.
func (d *Deliverer) send(ctx context.Context, p Provider, t push.Target, m push.Message) push.Outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(d.halted, cancel)
	defer stop()
	return p.Send(ctx, t, m)
}

// claim leases the batch when it is due, pending, unexpired and its
// registration has no other delivery in flight (store.ClaimBatch), then
// drops the members a dismissal fenced (≤ rule, reference-behaviour
// decisions table); a batch left with none ends as dismissed and hands on.
// It returns the batch to send now: this one, or the registration's next
// one it handed on to; nil when there is none. held reports that another
// delivery of the registration holds the lease: that delivery hands on to
// this batch when it ends, so nothing is scheduled for it (should that
// delivery die, its lease runs out and the sweep finds both batches lost,
// Sweeper). An early task does nothing either: the one for the due time
// exists.
func (d *Deliverer) claim(ctx context.Context, batchID string) (c *claimed, held bool, err error) {
	// The statements are not cut short by the request's budget: a claim
	// that committed must be seen through.
	db, cancel := recording(ctx)
	defer cancel()
	now := d.clock.Now().UnixMilli()
	token := uuid.NewString()
	cl, err := d.store.ClaimBatch(db, batchID, token, now, now+contract.LeaseDuration.Milliseconds(), push.ReasonExpired)
	if err != nil {
		return nil, false, fmt.Errorf("claim: %w", err)
	}
	if cl.Expired { // with any badge raise an earlier attempt made given back
		d.counters.Inc(obs.DeliveryExpired)
	}
	if !cl.Leased {
		return nil, cl.HeldUntil > 0, nil
	}
	b := cl.Batch
	c = &claimed{batch: b, token: token, attempts: cl.Attempts, device: cl.Device, raised: b.Badge > 0}
	c, err = d.open(ctx, db, c, cl.Fences, now)
	return c, false, err
}

// open opens the members of c, a batch this call leased at now, and drops
// those a dismissal fenced (fences, read with the lease); a batch left with
// none ends as dismissed and hands on. It returns the batch to send now: c,
// or the registration's next one it handed on to; nil when there is none.
// db is the claim's context, not cut short by the request's budget.
func (d *Deliverer) open(ctx, db context.Context, c *claimed, fences map[store.FenceKey]int64, now int64) (*claimed, error) {
	b := c.batch
	var err error
	if c.members, err = d.payloads.decode(b.ID, b.RegistrationID, b.Payload, d.store.PlainMembers(b.CreatedAt, now)); err != nil {
		switch {
		case errors.Is(err, seal.ErrKeyNotHeld): // another instance may hold it (rotation.go)
			return d.leave(ctx, c)
		case errors.Is(err, seal.ErrUnopenable):
			return d.unopenable(ctx, c)
		}
		return nil, err
	}
	kept, gone := withoutFenced(b.Host, c.members, fences)
	switch {
	case len(kept) == 0:
		return d.finish(ctx, c, store.BatchDismissed, "")
	case len(gone) > 0:
		payload := d.payloads.encode(b.ID, b.RegistrationID, kept)
		if err := d.store.SetLeasedMembers(db, b.ID, c.token, b.RegistrationID, payload, len(kept), gone, now); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		c.members = kept
		if c.raised {
			// The dropped members gave their part of the raise back: the
			// push carries the count as it now stands.
			dev, err := d.store.Device(db, b.RegistrationID)
			if err != nil && !errors.Is(err, store.ErrNoRow) {
				return nil, fmt.Errorf("claim: %w", err)
			}
			c.device.Badged, c.device.Badge = dev.Badged, dev.Badge
		}
	}
	return c, nil
}

// Leased is a batch that admission leased with its insert
// (store.NewBatch.LeaseToken), for Inline to deliver in the same request:
// the claim a delivery would make was made in the send's transaction, under
// the host lock, with the same rules (due, unexpired, the registration's
// only batch in flight, its members past the dismissal fences).
type Leased struct {
	// Batch is the batch as inserted, its first attempt counted.
	Batch store.Batch
	// Token is the lease's token.
	Token string
	// Device is the registration as the send found it.
	Device store.Device
}

// DeliverLeased sends l, a batch admission leased, and records the outcome;
// then it hands on as Deliver does. It returns an error only when the
// database failed, as Deliver does; the lease then keeps a second delivery
// off the batch until it runs out and the sweep hands it to a task.
func (d *Deliverer) DeliverLeased(ctx context.Context, l Leased) error {
	ctx, cancel := context.WithTimeout(ctx, ChainBudget)
	defer cancel()
	db, cancelDB := recording(ctx)
	c, err := d.open(ctx, db, &claimed{batch: l.Batch, token: l.Token, attempts: l.Batch.Attempts, device: l.Device},
		nil, d.clock.Now().UnixMilli())
	cancelDB()
	for err == nil && c != nil {
		c, err = d.deliver(ctx, c)
	}
	return err
}

// ReleaseLeased gives back the lease admission took for l, when the
// request's budget ran out before its delivery could start: the batch is
// pending and due now again, its attempt not counted, for the caller to
// schedule; the batches the lease held back are woken through the
// Deliverer's scheduler, as a release does (leave). It reports whether it
// gave the lease back; an error means the database failed, and the lease
// then runs out on its own, as a crashed delivery's does.
func (d *Deliverer) ReleaseLeased(ctx context.Context, l Leased) (bool, error) {
	rec, cancel := recording(ctx)
	defer cancel()
	now := d.clock.Now().UnixMilli()
	released, next, err := d.store.ReleaseBatch(rec, l.Batch.ID, l.Batch.RegistrationID, l.Token, now, now)
	if err != nil {
		return false, fmt.Errorf("release leased: %w", err)
	}
	// The batch itself is due again now: the caller schedules it.
	next = slices.DeleteFunc(next, func(id string) bool { return id == l.Batch.ID })
	d.wake(rec, l.Batch.RegistrationID, next, now, l.Token)
	return released, nil
}

// withoutFenced returns the members no dismissal fence covers, and the event
// ids of host's members it dropped: an alert with a notificationId whose
// fence, same epoch and id, is at or above its sequence is dropped. It
// returns members itself when nothing is dropped.
func withoutFenced(host string, members []contract.Notification, fences map[store.FenceKey]int64) ([]contract.Notification, []string) {
	if len(fences) == 0 {
		return members, nil
	}
	kept := members[:0:0]
	var gone []string
	for i := range members {
		m := &members[i]
		seq, fenced := fences[store.FenceKey{Epoch: m.Epoch, NotificationID: m.NotificationID}]
		if m.EffectiveKind() == contract.KindAlert && m.NotificationID != "" && fenced && m.Seq <= seq {
			gone = append(gone, eventID(host, m))
			continue
		}
		kept = append(kept, *m)
	}
	if len(gone) == 0 {
		return members, nil
	}
	return kept, gone
}

// retry puts the batch back for its next attempt at
// now + max(1 s, backoff by attempt, the provider's delay), or ends it as
// expired when that is at or past its deadline: a Retry-After is never
// shortened to fit (reference-behaviour §6). Either way it hands on to the
// batches this lease held back, which are due now.
func (d *Deliverer) retry(ctx context.Context, c *claimed, out push.Outcome) (*claimed, error) {
	now := d.clock.Now().UnixMilli()
	delay := max(contract.MinRetryDelay, backoff(c.attempts), out.RetryAfter)
	at := now + delay.Milliseconds()
	if at >= c.batch.ExpiresAt {
		d.counters.Inc(obs.DeliveryExpired)
		return d.finish(ctx, c, store.BatchExpired, out.Reason)
	}
	rec, cancel := recording(ctx)
	defer cancel()
	// The lease token fences the retry. A batch a dismissal emptied while
	// in flight is retried too: its next claim drops the fenced members and
	// ends it as dismissed. A lost lease retries and hands on nothing: the
	// new holder decides.
	retried, next, err := d.store.RetryLeasedBatch(rec, c.batch.ID, c.batch.RegistrationID, c.token, out.Reason, at, now)
	if err != nil {
		return nil, fmt.Errorf("retry: %w", err)
	}
	if retried {
		d.schedule(rec, c.batch.ID, c.batch.RegistrationID, at, "")
	}
	return d.handOn(ctx, c, next, now)
}

// backoff is the exponential delay before the next attempt after attempts
// attempts: 2, 4, 8, 16, then 30 s (reference-behaviour §6).
func backoff(attempts int) time.Duration {
	return min(contract.MaxBackoff, time.Second<<min(max(attempts, 1), 5))
}

// schedule hands a batch to the scheduler; a failure is counted, never
// returned: the sweep re-schedules due batches whose task was lost.
func (d *Deliverer) schedule(ctx context.Context, batchID, registrationID string, at int64, key string) {
	if err := d.scheduler.Schedule(ctx, batchID, registrationID, time.UnixMilli(at), key); err != nil {
		d.counters.Inc(obs.ScheduleFailed)
	}
}

// Unconfigured is the provider of a platform without credentials: every send
// ends as a terminal error with its reason, and nothing is sent.
type Unconfigured string

// Send returns a terminal outcome with the reason u.
func (u Unconfigured) Send(context.Context, push.Target, push.Message) push.Outcome {
	return push.Outcome{Kind: push.Terminal, Reason: string(u)}
}
