package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// start is the manual clock's first reading (2027-01-15).
var start = time.UnixMilli(1_800_000_000_000)

// errScheduleDown is what a failing recorder answers.
var errScheduleDown = errors.New("scheduler down")

// call is one Schedule call.
type call struct {
	BatchID string
	At      int64 // epoch ms
	Key     string
}

// recorder is a Scheduler that records its calls.
type recorder struct {
	// mu guards calls and fail.
	mu    sync.Mutex
	calls []call
	fail  bool
}

func (r *recorder) Schedule(_ context.Context, batchID, _ string, at time.Time, key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{batchID, at.UnixMilli(), key})
	if r.fail {
		return errScheduleDown
	}
	return nil
}

// take returns the calls since the last take, sorted by time then id.
func (r *recorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	slices.SortFunc(out, func(a, b call) int {
		if a.At != b.At {
			return int(a.At - b.At)
		}
		return strings.Compare(a.BatchID, b.BatchID)
	})
	return out
}

// env is an Admission on a fresh database with a manual clock.
type env struct {
	store    *store.Store
	clock    *clock.Manual
	sched    *recorder
	counters *obs.Counters
	adm      *delivery.Admission
}

// mustEnv returns an Admission over a fresh database of d with the default
// coalescing window.
func mustEnv(t testing.TB, d storetest.Dialect) *env {
	t.Helper()
	return mustEnvOn(t, storetest.Open(t, d), clock.NewManual(start))
}

// mustEnvOn returns an Admission over s, reading clk.
func mustEnvOn(t testing.TB, s *store.Store, clk *clock.Manual) *env {
	t.Helper()
	e := &env{store: s, clock: clk, sched: &recorder{},
		counters: obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil)))}
	var err error
	e.adm, err = delivery.NewAdmission(delivery.Options{Keys: sealtest.Ring(t), Digest: sealtest.DigestKey(t), Store: s, Clock: clk, Counters: e.counters,
		Scheduler: e.sched, Coalesce: contract.DefaultCoalesce})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// now is the clock in epoch ms.
func (e *env) now() int64 { return e.clock.Now().UnixMilli() }

// device registers a device of host and returns its registration id.
func (e *env) device(t testing.TB, host, name string) string {
	t.Helper()
	id, err := e.store.RegisterDevice(context.Background(), host, contract.RegisterRequest{
		DeviceID: name, Platform: contract.PlatformAndroid, Token: "tok-" + strings.Repeat("x", 40) + name,
	}, e.now())
	if err != nil {
		t.Fatalf("RegisterDevice: %v", err)
	}
	return id
}

// deadDevice registers a device of host that a provider retired.
func (e *env) deadDevice(t testing.TB, host, name string) string {
	t.Helper()
	id := e.device(t, host, name)
	d, err := e.store.Device(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.MarkDeviceDead(context.Background(), d, e.now()); err != nil || !ok {
		t.Fatalf("MarkDeviceDead = %v, %v", ok, err)
	}
	return id
}

// send admits n from host to ids and returns the statuses in order.
func (e *env) send(t testing.TB, host string, n contract.Notification, ids ...string) []contract.Status {
	t.Helper()
	res, err := e.adm.Send(context.Background(), host, contract.SendRequest{RegistrationIDs: ids, Notification: n})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	out := make([]contract.Status, len(res))
	for i, r := range res {
		if r.RegistrationID != ids[i] {
			t.Fatalf("result %d is for %q, want %q", i, r.RegistrationID, ids[i])
		}
		out[i] = r.Status
	}
	return out
}

// mustSend is send that wants every status to be want.
func (e *env) mustSend(t testing.TB, want contract.Status, host string, n contract.Notification, ids ...string) {
	t.Helper()
	for i, got := range e.send(t, host, n, ids...) {
		if got != want {
			t.Fatalf("Send(%s seq %d) result %d = %q, want %q", n.EffectiveKind(), n.Seq, i, got, want)
		}
	}
}

// rows returns the row counts of the admission tables.
func (e *env) rows(t testing.TB) map[string]int64 {
	t.Helper()
	n, err := e.store.RowCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]int64{"events": n["push_events"], "recipients": n["push_event_recipients"],
		"fences": n["push_dismissed_events"], "batches": n["push_delivery_batches"]}
}

// mustRows fails unless the admission tables hold want rows.
func (e *env) mustRows(t testing.TB, want map[string]int64) {
	t.Helper()
	if diff := cmp.Diff(want, e.rows(t)); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
}

// batch reads a batch.
func (e *env) batch(t testing.TB, id string) store.Batch {
	t.Helper()
	b, err := e.store.Batch(context.Background(), id)
	if err != nil {
		t.Fatalf("Batch(%q): %v", id, err)
	}
	return b
}

// members returns a batch's notifications, opened as the Deliverer opens
// them.
func (e *env) members(t testing.TB, id string) []contract.Notification {
	t.Helper()
	out, err := delivery.OpenMembers(sealtest.Ring(t), e.batch(t, id))
	if err != nil {
		t.Fatalf("batch %s payload: %v", id, err)
	}
	return out
}

// alert returns an agent alert with notificationId id and sequence seq.
func alert(id string, seq int64) contract.Notification {
	return contract.Notification{
		NotificationID: id, Seq: seq, Epoch: "epoch-1", Source: contract.SourceAgentTaskComplete,
		AgentState: contract.AgentFinished, Title: "Task finished", Body: fmt.Sprintf("Agent %s is done", id),
		WorktreeID: "wt-1",
	}
}

// bell returns a terminal-bell alert, which has no notificationId.
func bell(seq int64) contract.Notification {
	return contract.Notification{Seq: seq, Epoch: "epoch-1", Source: contract.SourceTerminalBell,
		Title: "Bell", Body: "tab 1"}
}

// dismissal returns the dismissal of alert id up to seq.
func dismissal(id string, seq int64) contract.Notification {
	n := alert(id, seq)
	n.Kind = contract.KindDismiss
	return n
}
