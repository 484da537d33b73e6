package delivery_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// badgeCase is a registration with a badge, on a fresh database of one
// dialect, and a Deliverer whose provider answers as scripted and keeps the
// badge of every message it got.
type badgeCase struct {
	*env
	prov *scriptedProvider
	dl   *delivery.Deliverer
	reg  string
}

// newBadgeCase opts a new registration in with count.
func newBadgeCase(t *testing.T, d storetest.Dialect, count int64) *badgeCase {
	t.Helper()
	return newBadgeCaseOn(t, storetest.Open(t, d), "phone", count)
}

// newBadgeCaseOn sets a badgeCase up on s: the registration of device
// (host "host") with its badge at count, delivered by a deliverer whose
// provider answers as scripted.
func newBadgeCaseOn(t *testing.T, s *store.Store, device string, count int64) *badgeCase {
	t.Helper()
	clk := clock.NewManual(start)
	e := mustEnvOn(t, s, clk)
	prov := &scriptedProvider{}
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(t), Store: e.store, Clock: clk,
		Counters: e.counters, Scheduler: delivery.NopScheduler{}, APNS: prov, FCM: prov})
	if err != nil {
		t.Fatal(err)
	}
	c := &badgeCase{env: e, prov: prov, dl: dl, reg: e.device(t, "host", device)}
	if err := e.store.SetBadge(context.Background(), "host", c.reg, count, e.now()); err != nil {
		t.Fatal(err)
	}
	return c
}

// alert sends an alert to the registration and returns its batch, due
// once the coalescing window has passed, which it lets pass.
func (c *badgeCase) alert(t *testing.T, id string, seq int64) string {
	t.Helper()
	c.mustSend(t, contract.StatusQueued, "host", alert(id, seq), c.reg)
	calls := c.sched.take()
	if len(calls) != 1 {
		t.Fatalf("%d schedule calls, want the new batch's", len(calls))
	}
	c.clock.Advance(contract.DefaultCoalesce)
	return calls[0].BatchID
}

// deliver delivers batch id, the provider answering Retry retries times
// first.
func (c *badgeCase) deliver(t *testing.T, id string, retries int) {
	t.Helper()
	c.prov.mu.Lock()
	c.prov.retries = retries
	c.prov.mu.Unlock()
	if err := c.dl.Deliver(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// retry delivers batch id again once its backoff has passed.
func (c *badgeCase) retry(t *testing.T, id string, retries int) {
	t.Helper()
	c.clock.Advance(contract.MaxBackoff)
	c.deliver(t, id, retries)
}

// want fails unless the provider got badges and the registration's count
// is count.
func (c *badgeCase) want(t *testing.T, badges string, count int64) {
	t.Helper()
	c.prov.mu.Lock()
	got := fmt.Sprint(c.prov.badges)
	c.prov.mu.Unlock()
	if got != badges {
		t.Errorf("badges sent %s, want %s", got, badges)
	}
	d, err := c.store.Device(context.Background(), c.reg)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Badged || d.Badge != count {
		t.Errorf("registration's badge %v %d, want %d", d.Badged, d.Badge, count)
	}
}

// TestBadgeRetryCarriesTheNewerCount: alert A's first attempt goes with 1
// and is retried; alert B goes with 2; A's retry carries 2, not the 1 of its
// first attempt, which would set the icon back, and raises nothing.
func TestBadgeRetryCarriesTheNewerCount(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			c := newBadgeCase(t, d, 0)
			a := c.alert(t, "a", 1)
			c.deliver(t, a, 1)
			b := c.alert(t, "b", 2)
			c.deliver(t, b, 0)
			c.retry(t, a, 0)
			c.want(t, "[1 2 2]", 2)
		})
	}
}

// TestBadgeRetryCarriesTheReset: the phone resets its badge (PUT badge 0)
// while A's retry is pending; the retry carries 0, the phone's own number,
// and raises nothing. A later alert counts from the reset.
func TestBadgeRetryCarriesTheReset(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			c := newBadgeCase(t, d, 4)
			a := c.alert(t, "a", 1)
			c.deliver(t, a, 1)
			if err := c.store.SetBadge(context.Background(), "host", c.reg, 0, c.now()); err != nil {
				t.Fatal(err)
			}
			c.retry(t, a, 0)
			c.want(t, "[5 0]", 0)
			c.deliver(t, c.alert(t, "b", 2), 0)
			c.want(t, "[5 0 1]", 1)
		})
	}
}

// TestBadgeRetryCarriesTheNewTokensCount: the phone registers a new token
// (its badge goes back to 0) while A's retry is pending; the retry goes to
// the new token with 0 and raises nothing.
func TestBadgeRetryCarriesTheNewTokensCount(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			c := newBadgeCase(t, d, 2)
			a := c.alert(t, "a", 1)
			c.deliver(t, a, 1)
			_, err := c.store.RegisterDevice(context.Background(), "host", contract.RegisterRequest{
				DeviceID: "phone", Platform: contract.PlatformAndroid, Token: "tok-" + strings.Repeat("y", 45),
			}, c.now())
			if err != nil {
				t.Fatal(err)
			}
			c.retry(t, a, 0)
			c.want(t, "[3 0]", 0)
		})
	}
}

// TestBadgeIsCappedAtTheRoutesMaximum: the count never passes 99,999, the
// largest PUT badge takes, and a push raised at the cap gives back only
// what it raised.
func TestBadgeIsCappedAtTheRoutesMaximum(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			c := newBadgeCase(t, d, contract.MaxBadge-1)
			c.deliver(t, c.alert(t, "a", 1), 0)
			c.deliver(t, c.alert(t, "b", 2), 0)
			c.want(t, fmt.Sprintf("[%d %d]", contract.MaxBadge, contract.MaxBadge), contract.MaxBadge)
			// Raised at the cap (by nothing), retried, then it expires.
			x := c.alert(t, "x", 3)
			c.deliver(t, x, 1)
			c.clock.Advance(contract.EventLifetime)
			c.deliver(t, x, 0)
			c.want(t, fmt.Sprintf("[%d %d %d]", contract.MaxBadge, contract.MaxBadge, contract.MaxBadge), contract.MaxBadge)
		})
	}
}

// TestBadgeGivenBack: a push that ends without reaching a provider gives
// its raise back, whichever way it ends: expired at its claim, expired by
// the sweep, out of time to retry, refused by the provider, cancelled by a
// dismissal; never below 0, and not past a reset made after its raise
// (PUT badge, a new token). The delivery that ends it gives it back at
// once; the sweep gives back what ended without one, and nothing twice.
func TestBadgeGivenBack(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			sweep := func(t *testing.T, c *badgeCase) {
				t.Helper()
				sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: c.store, Clock: c.clock, Counters: c.counters,
					Scheduler: c.sched})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sw.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
			}
			reset := func(t *testing.T, c *badgeCase, n int64) {
				t.Helper()
				if err := c.store.SetBadge(ctx, "host", c.reg, n, c.now()); err != nil {
					t.Fatal(err)
				}
			}
			for _, tt := range []struct {
				name   string
				badges string
				count  int64
				// end ends batch id, whose first attempt was retried.
				end func(t *testing.T, c *badgeCase, id string)
			}{
				{"expired at its claim", "[4]", 3, func(t *testing.T, c *badgeCase, id string) {
					c.clock.Advance(contract.EventLifetime)
					c.deliver(t, id, 0)
				}},
				{"expired by the sweep", "[4]", 3, func(t *testing.T, c *badgeCase, id string) {
					c.clock.Advance(contract.EventLifetime)
					sweep(t, c)
				}},
				{"no time left to retry", "[4 4]", 3, func(t *testing.T, c *badgeCase, id string) {
					c.clock.Set(time.UnixMilli(c.batch(t, id).ExpiresAt - 1))
					c.deliver(t, id, 1)
				}},
				{"refused by the provider", "[4 4]", 3, func(t *testing.T, c *badgeCase, id string) {
					c.clock.Advance(contract.MaxBackoff)
					c.prov.mu.Lock()
					c.prov.terminal = true
					c.prov.mu.Unlock()
					c.deliver(t, id, 0)
				}},
				{"cancelled by a dismissal", "[4 0]", 3, func(t *testing.T, c *badgeCase, id string) {
					c.mustSend(t, contract.StatusQueued, "host", dismissal("a", 1), c.reg)
					c.clock.Advance(contract.MaxBackoff)
					c.deliver(t, id, 0)
					for _, call := range c.sched.take() {
						c.deliver(t, call.BatchID, 0)
					}
				}},
				{"cancelled by a dismissal in flight", "[4 4 0]", 3, func(t *testing.T, c *badgeCase, id string) {
					c.clock.Advance(contract.MaxBackoff)
					c.prov.mu.Lock()
					c.prov.retries = 1
					c.prov.during = func() { c.mustSend(t, contract.StatusQueued, "host", dismissal("a", 1), c.reg) }
					c.prov.mu.Unlock()
					c.deliver(t, id, 1)
					c.retry(t, id, 0)
					for _, call := range c.sched.take() {
						c.deliver(t, call.BatchID, 0)
					}
				}},
				{"reset to 0 after the raise", "[4]", 0, func(t *testing.T, c *badgeCase, id string) {
					reset(t, c, 0)
					c.clock.Advance(contract.EventLifetime)
					c.deliver(t, id, 0)
				}},
				{"new token after the raise", "[4 1]", 1, func(t *testing.T, c *badgeCase, id string) {
					_, err := c.store.RegisterDevice(ctx, "host", contract.RegisterRequest{DeviceID: "phone",
						Platform: contract.PlatformAndroid, Token: "tok-" + strings.Repeat("y", 45)}, c.now())
					if err != nil {
						t.Fatal(err)
					}
					c.deliver(t, c.alert(t, "b", 2), 0)
					c.clock.Advance(contract.EventLifetime)
					c.deliver(t, id, 0)
				}},
				{"reset to 7 after the raise", "[4]", 7, func(t *testing.T, c *badgeCase, id string) {
					reset(t, c, 7)
					c.clock.Advance(contract.EventLifetime)
					sweep(t, c)
				}},
			} {
				t.Run(tt.name, func(t *testing.T) {
					c := newBadgeCase(t, d, 3)
					a := c.alert(t, "a", 1)
					c.deliver(t, a, 1)
					tt.end(t, c, a)
					c.want(t, tt.badges, tt.count)
					sweep(t, c) // gives nothing back twice
					c.want(t, tt.badges, tt.count)
				})
			}
		})
	}
}

// TestBadgeGivenBackOnce: ends of one batch past its deadline at once (the
// claims of its tasks, the sweep's expiry) give its raise back once, with
// the end that ended it.
func TestBadgeGivenBackOnce(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			opts := d.Options(t)
			s, err := store.Open(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			c := newBadgeCaseOn(t, s, "phone", 3)
			sw, err := delivery.NewSweeper(delivery.SweeperOptions{Store: s, Clock: c.clock, Counters: c.counters,
				Scheduler: c.sched})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				a := c.alert(t, fmt.Sprint("a", i), int64(2*i+1))
				c.deliver(t, a, 1) // raised, and left for a retry
				c.want(t, fmt.Sprint(c.prov.badges), int64(4+i))
				c.clock.Advance(contract.EventLifetime)
				var (
					wg             sync.WaitGroup
					expired, given atomic.Int64
				)
				for range 8 {
					wg.Add(2)
					go func() {
						defer wg.Done()
						if err := c.dl.Deliver(ctx, a); err != nil {
							t.Error(err)
						}
					}()
					go func() {
						defer wg.Done()
						r, err := sw.Sweep(ctx)
						if err != nil {
							t.Error(err)
						}
						expired.Add(r.Expired)
						given.Add(r.BadgesGivenBack)
					}()
				}
				wg.Wait()
				if b := c.batch(t, a); b.State != store.BatchExpired {
					t.Fatalf("batch %s, want expired", b.State)
				}
				if expired.Load() != given.Load() || expired.Load() > 1 {
					t.Errorf("sweeps expired %d and gave back %d, want as many, at most 1", expired.Load(), given.Load())
				}
				c.want(t, fmt.Sprint(c.prov.badges), int64(3+i))
				// The next alert counts from there.
				c.deliver(t, c.alert(t, fmt.Sprint("b", i), int64(2*i+2)), 0)
			}
		})
	}
}

// TestBadgeGivenBackForDismissedMembers: a dismissal that takes some of a
// summary's members gives back their part of its raise, whether it comes
// while the batch waits for its retry (admission takes them out) or while
// it is in flight (the next claim does): the retry carries the count of
// what it still brings.
func TestBadgeGivenBackForDismissedMembers(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			for _, inFlight := range []bool{false, true} {
				t.Run(fmt.Sprint("in flight ", inFlight), func(t *testing.T) {
					c := newBadgeCase(t, d, 3)
					c.mustSend(t, contract.StatusQueued, "host", alert("a", 1), c.reg)
					c.mustSend(t, contract.StatusQueued, "host", alert("b", 2), c.reg)
					calls := c.sched.take()
					c.clock.Advance(contract.DefaultCoalesce)
					id := calls[0].BatchID
					if n := len(c.members(t, id)); n != 2 {
						t.Fatalf("batch has %d members, want a and b", n)
					}
					dismiss := func() { c.mustSend(t, contract.StatusQueued, "host", dismissal("a", 1), c.reg) }
					if inFlight {
						c.prov.mu.Lock()
						c.prov.during = dismiss
						c.prov.mu.Unlock()
					}
					c.deliver(t, id, 1)
					if !inFlight {
						dismiss()
					}
					c.want(t, "[5]", map[bool]int64{false: 4, true: 5}[inFlight])
					c.retry(t, id, 0)
					c.want(t, "[5 4]", 4)
				})
			}
		})
	}
}
