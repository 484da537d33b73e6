package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// Delivery receipts (issue "delivery receipts"), each state reached through
// the real routes, the real delivery and the stand-ins, on both databases.

// now is the emulator's clock in epoch ms.
func (e *emu) now() int64 { return e.clk.Now().UnixMilli() }

// registerPhone registers an iPhone with a token of its own, so that a fault
// can name it.
func (e *emu) registerPhone(device string) (id, token string) {
	e.t.Helper()
	token = fmt.Sprintf("%x", device) + strings.Repeat("0", 64)
	id, err := e.host.Register(context.Background(), hostclient.RegisterParams{DeviceID: device,
		Platform: contract.PlatformIOS, Token: token, APNSEnvironment: contract.APNSSandbox})
	if err != nil {
		e.t.Fatal(err)
	}
	return id, token
}

// sendTo sends n to regs and fails unless every one is queued.
func (e *emu) sendTo(n contract.Notification, regs ...string) {
	e.t.Helper()
	res, err := e.host.Send(context.Background(), regs, n)
	if err != nil {
		e.t.Fatalf("Send: %v", err)
	}
	for _, r := range res {
		if r.Status != contract.StatusQueued {
			e.t.Fatalf("Send(seq %d) to %s = %s, want queued", n.Seq, r.RegistrationID, r.Status)
		}
	}
}

// receipts reads the receipts of events as the host sees them.
func (e *emu) receipts(events ...contract.EventRef) []contract.Receipt {
	e.t.Helper()
	got, err := e.host.Receipts(context.Background(), events)
	if err != nil {
		e.t.Fatalf("Receipts: %v", err)
	}
	if len(got) != len(events) {
		e.t.Fatalf("Receipts answered %d receipts for %d events", len(got), len(events))
	}
	return got
}

// fates returns the recipients of n's receipt, which must be known.
func (e *emu) fates(n contract.Notification) []contract.RecipientReceipt {
	e.t.Helper()
	r := e.receipts(hostclient.EventOf(n))[0]
	if !r.Known {
		e.t.Fatalf("receipt of seq %d is unknown", n.Seq)
	}
	return r.Recipients
}

// mustFates fails unless n's recipients are want.
func (e *emu) mustFates(n contract.Notification, want ...contract.RecipientReceipt) {
	e.t.Helper()
	if diff := cmp.Diff(want, e.fates(n)); diff != "" {
		e.t.Fatalf("receipt of seq %d (-want +got):\n%s", n.Seq, diff)
	}
}

func fate(reg string, s contract.ReceiptStatus, at int64, reason string) contract.RecipientReceipt {
	return contract.RecipientReceipt{RegistrationID: reg, Status: s, At: at, Reason: reason}
}

// leaseAsCrashed leases the one pending batch as a deliverer that then died
// would have, and returns its id.
func (e *emu) leaseAsCrashed() string {
	e.t.Helper()
	ctx := context.Background()
	id := e.pendingBatch()
	b, err := e.em.svc.Store.Batch(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	err = e.em.svc.Store.HostTx(ctx, b.Host, func(tx *store.Tx) error {
		_, err := tx.LeaseBatch(ctx, id, "dead-deliverer", e.clk.Now().Add(contract.LeaseDuration).UnixMilli())
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func TestReceiptsQueuedThenSent(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			a, _ := e.registerPhone("a")
			b, _ := e.registerPhone("b")
			n1, n2 := alert("n1", 1), alert("n2", 2)
			t0 := e.now()
			e.sendTo(n1, b, a)
			e.advance(1000)
			e.sendTo(n2, a)
			// Waiting for the window: queued since accepted, in the order
			// accepted.
			e.mustFates(n1, fate(b, contract.ReceiptQueued, t0, ""), fate(a, contract.ReceiptQueued, t0, ""))
			e.mustFates(n2, fate(a, contract.ReceiptQueued, t0+1000, ""))
			e.advance(2000)
			// One push each: n1 alone to b, n1 and n2 in one summary to a.
			if n := len(e.inbox()); n != 2 {
				t.Fatalf("%d provider requests, want 2", n)
			}
			e.mustFates(n1, fate(b, contract.ReceiptSent, t0+3000, ""), fate(a, contract.ReceiptSent, t0+3000, ""))
			e.mustFates(n2, fate(a, contract.ReceiptSent, t0+3000, ""))
		})
	}
}

func TestReceiptsOrderAndRepeats(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			a, _ := e.registerPhone("a")
			b, _ := e.registerPhone("b")
			c, _ := e.registerPhone("c")
			n := alert("n1", 1)
			t0 := e.now()
			// Three requests in one millisecond: the order is the order
			// of acceptance, not of ids or of place in a request.
			e.sendTo(n, c, a)
			e.sendTo(n, b)
			e.sendTo(n, a, c) // duplicates: still where they were first

			q := contract.ReceiptQueued
			e.mustFates(n, fate(c, q, t0, ""), fate(a, q, t0, ""), fate(b, q, t0, ""))
			// A repeated event is answered each time, in request order.
			other := alert("other", 9)
			got := e.receipts(hostclient.EventOf(n), hostclient.EventOf(other), hostclient.EventOf(n))
			if !got[0].Known || got[1].Known || !got[2].Known || len(got[2].Recipients) != 3 {
				t.Fatalf("receipts = %+v, want known, unknown, known", got)
			}
			if got[1].Recipients == nil || len(got[1].Recipients) != 0 || got[1].Kind != contract.KindAlert ||
				got[1].NotificationEpoch != other.Epoch || got[1].NotificationSeq != other.Seq {
				t.Fatalf("unknown receipt = %+v, want its identity and no recipients", got[1])
			}
		})
	}
}

func TestReceiptsRetryingThenSent(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			a, _ := e.registerPhone("a")
			e.fault(`{"provider":"apns","token":"*","status":503,"reason":"ServiceUnavailable","times":1}`)
			n := alert("n1", 1)
			t0 := e.now()
			e.sendTo(n, a)
			e.advance(3000)
			e.mustFates(n, fate(a, contract.ReceiptRetrying, t0+3000, "ServiceUnavailable"))
			e.advance(2000) // the backoff after one attempt
			e.mustFates(n, fate(a, contract.ReceiptSent, t0+5000, ""))

			// Dismissed while it waits for its retry: dismissed, without
			// the failed attempt's reason.
			e.fault(`{"provider":"apns","token":"*","status":503,"reason":"ServiceUnavailable","times":1}`)
			m := alert("n2", 2)
			e.sendTo(m, a)
			e.advance(3000)
			e.mustFates(m, fate(a, contract.ReceiptRetrying, t0+8000, "ServiceUnavailable"))
			dm := m
			dm.Kind = contract.KindDismiss
			e.sendTo(dm, a)
			e.mustFates(m, fate(a, contract.ReceiptDismissed, t0+8000, ""))
		})
	}
}

func TestReceiptsProviderEnds(t *testing.T) {
	tests := []struct {
		name, fault string
		want        contract.ReceiptStatus
		reason      string
	}{
		{"dead", `"status":410,"reason":"Unregistered"`, contract.ReceiptDead, "Unregistered"},
		{"error", `"status":400,"reason":"BadTopic"`, contract.ReceiptError, "BadTopic"},
		// A Retry-After past the deadline is never shortened: it expires.
		{"expired", `"status":429,"reason":"TooManyRequests","retryAfter":"600"`, contract.ReceiptExpired,
			"TooManyRequests"},
	}
	for _, d := range storetest.Dialects(t) {
		for _, tt := range tests {
			t.Run(d.Name+"/"+tt.name, func(t *testing.T) {
				e := startEmu(t, d)
				a, token := e.registerPhone("a")
				e.registerPhone("b")
				e.fault(`{"provider":"apns","token":"` + token + `",` + tt.fault + `}`)
				n := alert("n1", 1)
				t0 := e.now()
				e.sendTo(n, a)
				e.advance(3000)
				e.mustFates(n, fate(a, tt.want, t0+3000, tt.reason))
			})
		}
	}
}

func TestReceiptsExpiredRetrying(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			a, _ := e.registerPhone("a")
			e.fault(`{"provider":"apns","token":"*","status":500,"reason":"InternalServerError","times":100}`)
			n := alert("n1", 1)
			t0 := e.now()
			n.ExpiresAt = t0 + 6000
			e.sendTo(n, a)
			// Due 500 ms before its deadline at most: attempts at +3 s and
			// +5 s, and the next (+9 s) is past it.
			e.advance(3000)
			e.mustFates(n, fate(a, contract.ReceiptRetrying, t0+3000, "InternalServerError"))
			e.advance(2000)
			e.mustFates(n, fate(a, contract.ReceiptExpired, t0+5000, "InternalServerError"))
		})
	}
}

func TestReceiptsDismissed(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			a, _ := e.registerPhone("a")
			b, _ := e.registerPhone("b")
			x, y := alert("x", 1), alert("y", 2)
			t0 := e.now()
			e.sendTo(x, a, b) // a batch of its own on b
			e.sendTo(y, a)    // joins x's batch on a
			e.advance(1000)
			// Dismissing x takes it out of a's summary, which goes on with
			// y, and dismisses b's batch whole.
			dx := x
			dx.Kind = contract.KindDismiss
			e.sendTo(dx, a, b)
			e.mustFates(x, fate(a, contract.ReceiptDismissed, t0+1000, ""), fate(b, contract.ReceiptDismissed, t0+1000, ""))
			// An alert the fence already covers is accepted, and dismissed.
			e.advance(500)
			e.sendTo(x, b) // a duplicate on b
			old := alert("x", 0)
			e.sendTo(old, a)
			e.mustFates(old, fate(a, contract.ReceiptDismissed, t0+1500, ""))
			e.advance(1500)
			e.mustFates(y, fate(a, contract.ReceiptSent, t0+3000, ""))
			e.mustFates(x, fate(a, contract.ReceiptDismissed, t0+1000, ""), fate(b, contract.ReceiptDismissed, t0+1000, ""))
			// The dismissal itself was due at once, and sent to both at the
			// next run of the tasks.
			e.mustFates(dx, fate(a, contract.ReceiptSent, t0+1500, ""), fate(b, contract.ReceiptSent, t0+1500, ""))
		})
	}
}

func TestReceiptsDismissedInFlight(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			a, _ := e.registerPhone("a")
			x, y := alert("x", 1), alert("y", 2)
			t0 := e.now()
			e.sendTo(x, a)
			e.sendTo(y, a)
			e.setClock(3000)
			e.leaseAsCrashed()
			// The dismissal cannot take x out of a leased batch; the next
			// claim, once the lease ends, drops it and sends y.
			dx := x
			dx.Kind = contract.KindDismiss
			e.sendTo(dx, a)
			e.advance(contract.LeaseDuration.Milliseconds())
			e.mustFates(x, fate(a, contract.ReceiptDismissed, t0+3000+contract.LeaseDuration.Milliseconds(), ""))
			e.mustFates(y, fate(a, contract.ReceiptSent, t0+3000+contract.LeaseDuration.Milliseconds(), ""))
		})
	}
}

func TestReceiptsDropped(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			ctx := context.Background()
			a, _ := e.registerPhone("a")
			b, _ := e.registerPhone("b")
			n := alert("n1", 1)
			t0 := e.now()
			e.sendTo(n, a, b)
			e.advance(1000)
			if err := e.host.Delete(ctx, a); err != nil {
				t.Fatal(err)
			}
			e.mustFates(n, fate(a, contract.ReceiptDropped, t0+1000, ""), fate(b, contract.ReceiptQueued, t0, ""))
			e.advance(2000)
			e.mustFates(n, fate(a, contract.ReceiptDropped, t0+1000, ""), fate(b, contract.ReceiptSent, t0+3000, ""))
			if in := e.inbox(); len(in) != 1 {
				t.Fatalf("%d provider requests, want 1 (none to the deleted phone)", len(in))
			}

			// Deleted while in flight: dropped when the lease ends, and
			// never sent.
			m := alert("n2", 2)
			e.sendTo(m, b)
			e.setClock(3000)
			e.leaseAsCrashed()
			if err := e.host.Delete(ctx, b); err != nil {
				t.Fatal(err)
			}
			e.mustFates(m, fate(b, contract.ReceiptQueued, t0+3000, ""))
			e.advance(contract.LeaseDuration.Milliseconds())
			e.mustFates(m, fate(b, contract.ReceiptDropped, t0+6000+contract.LeaseDuration.Milliseconds(), ""))
			if in := e.inbox(); len(in) != 1 {
				t.Fatalf("%d provider requests, want still 1", len(in))
			}
		})
	}
}

func TestReceiptsOtherHostsAndRetention(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			a, _ := e.registerPhone("a")
			n := alert("n1", 1)
			t0 := e.now()
			e.sendTo(n, a)
			e.advance(3000)

			// Another host asking for the same identity learns nothing,
			// and its own event of that identity is its own.
			other := e.otherHost()
			ref := hostclient.EventOf(n)
			got, err := other.Receipts(context.Background(), []contract.EventRef{ref})
			if err != nil || len(got) != 1 || got[0].Known || len(got[0].Recipients) != 0 {
				t.Fatalf("other host's Receipts = %+v, %v; want unknown", got, err)
			}
			p, err := other.Register(context.Background(), hostclient.RegisterParams{DeviceID: "p",
				Platform: contract.PlatformAndroid, Token: "fcm-token-p" + strings.Repeat("x", 32)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Send(context.Background(), []string{p}, n); err != nil {
				t.Fatal(err)
			}
			got, err = other.Receipts(context.Background(), []contract.EventRef{ref})
			if err != nil || !got[0].Known || len(got[0].Recipients) != 1 || got[0].Recipients[0].RegistrationID != p {
				t.Fatalf("other host's own Receipts = %+v, %v; want its own phone only", got, err)
			}
			e.mustFates(n, fate(a, contract.ReceiptSent, t0+3000, ""))

			// Known for the whole retention, unknown after.
			e.setClock(contract.Retention.Milliseconds() - 3000)
			e.mustFates(n, fate(a, contract.ReceiptSent, t0+3000, ""))
			e.setClock(1)
			if r := e.receipts(ref)[0]; r.Known || len(r.Recipients) != 0 {
				t.Fatalf("receipt after the retention = %+v, want unknown", r)
			}
		})
	}
}

// otherHost returns a second host of the emulator, signed out.
func (e *emu) otherHost() *hostclient.Client {
	e.t.Helper()
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := hostclient.New(hostclient.Options{BaseURL: e.srv.URL, Keypair: kp, HTTPClient: e.srv.Client(), Clock: e.clk})
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}
