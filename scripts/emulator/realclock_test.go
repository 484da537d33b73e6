package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/store/storetest"
)

// realClockWait bounds how long a real-clock process test waits for the
// stand-ins to receive what it expects: far beyond any deadline the tests
// set, so a wait that runs out means something was lost, not slow.
const realClockWait = 20 * time.Second

// liveEmulator is an emulator process on the real clock with a signed-in
// host, driven as a desktop would drive the deployed gateway.
type liveEmulator struct {
	p    *process
	host *hostclient.Client
}

// forEachDatabase runs f against an emulator process on SQLite and on
// PostgreSQL (a schema of its own), on the real clock unless env says
// otherwise.
func forEachDatabase(t *testing.T, f func(t *testing.T, e *liveEmulator), env ...string) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			env := slices.Clone(env)
			if url := d.Options(t).DatabaseURL; url != "" {
				env = append(env, "ORCA_PUSH_DATABASE_URL="+url)
			}
			f(t, newLiveEmulator(t, startEmulator(t, env...)))
		})
	}
}

// newLiveEmulator drives the emulator process p as a new host on the real
// clock.
func newLiveEmulator(t testing.TB, p *process) *liveEmulator {
	t.Helper()
	e := &liveEmulator{p: p}
	e.newHost(t)
	return e
}

// newHost makes e send as a new host from now on.
func (e *liveEmulator) newHost(t testing.TB) {
	t.Helper()
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e.host, err = hostclient.New(hostclient.Options{BaseURL: e.p.origin, Keypair: kp,
		HTTPClient: http.DefaultClient, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
}

// phone registers an iPhone named device (its own token) and returns its
// registration id.
func (e *liveEmulator) phone(t testing.TB, device string) string {
	t.Helper()
	id, err := e.host.Register(context.Background(), hostclient.RegisterParams{DeviceID: device,
		Platform: contract.PlatformIOS, Token: phoneToken(device), APNSEnvironment: contract.APNSSandbox})
	if err != nil {
		t.Fatalf("Register(%s): %v", device, err)
	}
	return id
}

// phoneToken is the APNs token of the phone named device: hex of its name.
func phoneToken(device string) string { return hex.EncodeToString([]byte(device)) }

// send sends n to the registrations and wants every result queued.
func (e *liveEmulator) send(t testing.TB, n contract.Notification, regs ...string) {
	t.Helper()
	res, err := e.host.Send(context.Background(), regs, n)
	if err != nil {
		t.Fatalf("Send(%s): %v", n.NotificationID, err)
	}
	for _, r := range res {
		if r.Status != contract.StatusQueued {
			t.Fatalf("Send(%s) to %s = %s, want queued", n.NotificationID, r.RegistrationID, r.Status)
		}
	}
}

// awaitDelivered polls the inbox (a process boundary) until the APNs
// stand-in accepted an alert carrying every one of ids, alone or as a
// summary member, and returns the accepted deliveries. It fails the test
// when realClockWait passes first.
func (e *liveEmulator) awaitDelivered(t testing.TB, ids ...string) []standin.Delivery {
	t.Helper()
	var got []standin.Delivery
	var seen []string
	wall := clock.Real{}
	for end := wall.Now().Add(realClockWait); wall.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		got, seen = nil, nil
		for _, d := range processInbox(t, e.p.origin) {
			if d.Status != http.StatusOK {
				continue
			}
			got = append(got, d)
			seen = append(seen, deliveredIDs(t, d)...)
		}
		if !slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(seen, id) }) {
			return got
		}
	}
	t.Fatalf("after %v the stand-ins accepted notifications %q, want all of %q", realClockWait, seen, ids)
	return nil
}

// deliveredIDs are the notificationIds an accepted APNs delivery carries:
// its summary's members, or its own.
func deliveredIDs(t testing.TB, d standin.Delivery) []string {
	t.Helper()
	var body struct {
		Orca struct {
			NotificationID string `json:"notificationId"`
			SummaryMembers []struct {
				NotificationID string `json:"notificationId"`
			} `json:"summaryMembers"`
		} `json:"orca"`
	}
	if err := json.Unmarshal(d.Body, &body); err != nil {
		t.Fatalf("inbox body: %v", err)
	}
	if len(body.Orca.SummaryMembers) == 0 {
		return []string{body.Orca.NotificationID}
	}
	var ids []string
	for _, m := range body.Orca.SummaryMembers {
		ids = append(ids, m.NotificationID)
	}
	return ids
}

// expiring is the alert id expiring life after now, on the real clock. The
// sequence number makes the event: each alert of a test needs its own.
func expiring(id string, seq int64, life time.Duration) contract.Notification {
	n := alert(id, seq)
	n.ExpiresAt = clock.Real{}.Now().Add(life).UnixMilli()
	return n
}

// TestShortDeadlinesDelivered reproduces the hardening issue's losses with
// the real clock, where a dispatch takes time: every alert accepted with
// time left reaches the stand-in before its deadline, including the alerts
// that were fine before a short-lived one joined them.
func TestShortDeadlinesDelivered(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, e *liveEmulator) {
		t.Run("five short-lived alerts to one phone", func(t *testing.T) {
			p := e.phone(t, "burst")
			var ids []string
			for i, life := range []time.Duration{1000, 2000, 2900, 3500, 5000} {
				id := fmt.Sprintf("burst-%d", i)
				e.send(t, expiring(id, int64(i+1), life*time.Millisecond), p)
				ids = append(ids, id)
			}
			e.awaitDelivered(t, ids...)
		})
		t.Run("one at a time", func(t *testing.T) {
			lives := []time.Duration{500, 1000, 1500, 2000, 2500, 3100}
			var ids, phones []string
			for i := range lives {
				ids = append(ids, fmt.Sprintf("single-%d", i))
				phones = append(phones, e.phone(t, ids[i]))
			}
			for i, life := range lives {
				e.send(t, expiring(ids[i], int64(11+i), life*time.Millisecond), phones[i])
			}
			e.awaitDelivered(t, ids...)
		})
		t.Run("a short-lived alert after a long-lived one", func(t *testing.T) {
			p := e.phone(t, "pair")
			e.send(t, alert("long", 21), p)
			// Just after the first alert's due time: joining
			// would have pulled its deadline there.
			e.send(t, expiring("short", 22, contract.DefaultCoalesce+time.Millisecond), p)
			e.awaitDelivered(t, "long", "short")
		})
	})
}

// BenchmarkBurstAfterWindow measures, with the real clock, how long after
// its coalescing window a burst that splits into three batches has reached
// the APNs stand-in in full: forty alerts to one phone, two of them with
// 1800-character ids, so two batches are due at once during the burst and
// the third when its window closes. One batch of a registration is in
// flight at a time; the others must follow the moment it ends. The window's
// end is taken from before the send that opens the third batch, so the
// figure is an upper bound.
//
//	go test -run '^$' -bench BurstAfterWindow -benchtime 5x ./scripts/emulator
func BenchmarkBurstAfterWindow(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(d.Name, func(b *testing.B) {
			var env []string
			if url := d.Options(b).DatabaseURL; url != "" {
				env = append(env, "ORCA_PUSH_DATABASE_URL="+url)
			}
			p := startEmulator(b, env...)
			e := newLiveEmulator(b, p)
			var lates []float64
			seq := int64(0)
			for i := 0; b.Loop(); i++ {
				// A host of its own each time: forty alerts a burst would
				// soon spend one host's quota.
				e.newHost(b)
				reg := e.phone(b, fmt.Sprintf("phone-%d", i))
				var ids []string
				var windowEnd int64
				for j := range 40 {
					id := fmt.Sprintf("b%d-%02d", i, j)
					if j == 10 || j == 25 {
						id = longID(id)
					}
					if j == 25 {
						// It opens the last batch, whose window
						// closes 3 s after it is accepted.
						windowEnd = clock.Real{}.Now().Add(contract.DefaultCoalesce).UnixMilli()
					}
					seq++
					n := alert(id, seq)
					n.Body = "build"
					e.send(b, n, reg)
					ids = append(ids, id)
				}
				got := e.awaitDelivered(b, ids...)
				last := int64(0)
				for _, dl := range got {
					if strings.HasSuffix(dl.Path, "/"+phoneToken(fmt.Sprintf("phone-%d", i))) {
						last = max(last, dl.ReceivedAt)
					}
				}
				lates = append(lates, float64(last-windowEnd))
				emulatortest.Control(b, p.origin, "DELETE", "/_emulator/inbox", "", nil)
			}
			slices.Sort(lates)
			b.ReportMetric(lates[len(lates)/2], "ms-after-window-p50")
			b.ReportMetric(lates[len(lates)-1], "ms-after-window-max")
		})
	}
}
