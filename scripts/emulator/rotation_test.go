package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/seal"
	"onorca.dev/push/shared/store/storetest"
)

// The tests of this file run two emulator processes on one PostgreSQL
// database as two instances of the gateway during a payload-key rotation
// (infra/README.md, "Payload keys"): each started with its own
// ORCA_PUSH_PAYLOAD_KEYS, as Cloud Run instances of two revisions are, each
// with its own manual clock and Cloud Tasks emulator. A batch one instance
// sealed reaches the other through the other's sweep, or through its
// deliver function called as Cloud Tasks calls it (a task may reach any
// instance).

// ringEnv is the environment of an instance whose ring is the entries keys,
// sealing with the key sealID (or, when empty, with the ring's first).
func ringEnv(keys []string, sealID string) []string {
	return []string{"ORCA_PUSH_PAYLOAD_KEYS=" + strings.Join(keys, ","), "ORCA_PUSH_PAYLOAD_SEAL_KEY=" + sealID}
}

// instances is a PostgreSQL database that emulator processes share, with
// one host that sends through any of them.
type instances struct {
	base []string // the environment every instance gets
	db   *sql.DB
	kp   hostclient.Keypair
	reg  string // the host's phone
	// seen holds the batches send has returned.
	seen map[string]bool
}

// newInstances makes the shared database, the environment of its
// instances (one digest key for all: the events they compare are shared)
// and the host, whose phone registers through the first instance started.
func newInstances(t *testing.T) *instances {
	t.Helper()
	opts := storetest.Postgres(t).Options(t)
	digest, err := seal.NewDigestKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := hostclient.GenerateKeypair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &instances{db: storetest.SQL(t, opts), kp: kp, seen: map[string]bool{},
		base: []string{"ORCA_PUSH_DATABASE_URL=" + opts.DatabaseURL, "ORCA_PUSH_MANUAL_CLOCK=1",
			"ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_DIGEST_KEY=" + digest}}
}

// start starts an instance with the ring env gives.
func (s *instances) start(t *testing.T, ring []string) *process {
	t.Helper()
	p := startEmulator(t, append(append([]string(nil), s.base...), ring...)...)
	if s.reg == "" {
		var err error
		s.reg, err = s.host(t, p).Register(context.Background(), hostclient.RegisterParams{DeviceID: "phone",
			Platform: contract.PlatformIOS, Token: strings.Repeat("ab", 32), APNSEnvironment: contract.APNSProduction})
		if err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// host is the host's client of instance p.
func (s *instances) host(t *testing.T, p *process) *hostclient.Client {
	t.Helper()
	h, err := hostclient.New(hostclient.Options{BaseURL: p.origin, Keypair: s.kp, HTTPClient: http.DefaultClient,
		Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// send sends an alert titled title through p to the phone and returns its
// batch: due at once, its task in p's Cloud Tasks emulator.
func (s *instances) send(t *testing.T, p *process, seq int64, title string) string {
	t.Helper()
	n := contract.Notification{NotificationID: fmt.Sprint("n", seq), Seq: seq, Epoch: "e",
		Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished, Title: title, Body: "b"}
	res, err := s.host(t, p).Send(context.Background(), []string{s.reg}, n)
	if err != nil || len(res) != 1 || res[0].Status != contract.StatusQueued {
		t.Fatalf("Send(%s) = %v, %v; want queued", title, res, err)
	}
	rows, err := s.db.Query(`SELECT batch_id FROM push_delivery_batches`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var made []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if !s.seen[id] {
			made = append(made, id)
		}
	}
	if err := rows.Err(); err != nil || len(made) != 1 {
		t.Fatalf("Send(%s) made batches %v (%v), want one", title, made, err)
	}
	s.seen[made[0]] = true
	return made[0]
}

// batch is a batch's state and attempt count as the database holds them.
func (s *instances) batch(t *testing.T, id string) (string, int) {
	t.Helper()
	var state string
	var attempts int
	if err := s.db.QueryRow(`SELECT state, attempts FROM push_delivery_batches WHERE batch_id = $1`, id).Scan(&state, &attempts); err != nil {
		t.Fatal(err)
	}
	return state, attempts
}

// sealedWith is the key id batch id's only member is sealed under.
func (s *instances) sealedWith(t *testing.T, id string) string {
	t.Helper()
	var payload string
	if err := s.db.QueryRow(`SELECT payload_json FROM push_delivery_batches WHERE batch_id = $1`, id).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(payload, `"sealed":"v2.`)
	key, _, _ := strings.Cut(rest, ":")
	if !ok {
		t.Fatalf("batch %s holds no sealed member: %s", id, payload)
	}
	return key
}

// deliverOn calls p's deliver function for batch id as a task does, after
// moving p's clock ten seconds on: each process's manual clock started at
// the real time of its own start, so the other's batches may be ahead of
// it by the time between the two starts, a second or more when the
// machine is busy (with one second, the whole suite on two cores once left
// a batch not yet due to the instance that was to deliver it).
func deliverOn(t *testing.T, p *process, id string) {
	t.Helper()
	emulatortest.Control(t, p.origin, "POST", "/_emulator/clock", `{"advanceMs":10000}`, nil)
	emulatortest.Control(t, p.origin, "POST", deliverPath, fmt.Sprintf(`{"batchId":%q}`, id), nil)
}

// counters returns p's counters.
func counters(t *testing.T, p *process) map[string]int64 {
	t.Helper()
	var c struct{ Counters map[string]int64 }
	emulatortest.Control(t, p.origin, "GET", "/_emulator/counters", "", &c)
	return c.Counters
}

// sentTitles returns the APNs titles p's stand-in accepted.
func sentTitles(t *testing.T, p *process) []string {
	t.Helper()
	var titles []string
	for _, d := range processInbox(t, p.origin) {
		if d.Provider != standin.APNS || d.Status != http.StatusOK {
			t.Fatalf("stand-in got %+v, want accepted APNs requests only", d)
		}
		titles = append(titles, parseAPNs(t, d).APS.Alert.Title)
	}
	return titles
}

// newEntries returns new ring entries with the given ids.
func newEntries(t *testing.T, ids ...string) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		var err error
		if out[i], err = seal.NewEntry(rand.Reader, id); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRotationAcrossInstances is issue 30's reproduction of a rotation done
// out of order: instance B already seals with k2 while instance A holds
// only k1. B's alert reaches A's deliver and A cannot open it: A leaves it
// pending, sends nothing and counts no attempt, instead of ending it
// expired. Once A restarts with a ring that holds k2, its sweep finds the
// batch (the retry's task died with the process) and the alert is delivered,
// once, with its text. PostgreSQL only: two processes share the database.
func TestRotationAcrossInstances(t *testing.T) {
	s := newInstances(t)
	keys := newEntries(t, "k1", "k2")
	a := s.start(t, ringEnv(keys[:1], ""))
	b := s.start(t, ringEnv(keys, "k2"))
	id := s.send(t, b, 1, "Sealed under k2")

	// B's task reaches A (Cloud Tasks calls any instance of deliver).
	deliverOn(t, a, id)
	if state, attempts := s.batch(t, id); state != "pending" || attempts != 0 {
		t.Fatalf("after A's claim the batch is %s with %d attempts, want pending with 0", state, attempts)
	}
	if got := sentTitles(t, a); len(got) != 0 {
		t.Fatalf("A sent %q", got)
	}
	if c := counters(t, a); c[obs.PayloadKeyNotHeld] != 1 || c[obs.PayloadUnopenable] != 0 {
		t.Fatalf("A's counters %v, want payload_key_not_held 1 and nothing unopenable", c)
	}

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	a = s.start(t, ringEnv(keys, ""))
	for range 2 { // sweeps run each minute; the batch is lost to them 30 s after its new due time
		emulatortest.Control(t, a.origin, "POST", "/_emulator/clock", `{"advanceMs":61000}`, nil)
		emulatortest.Control(t, a.origin, "POST", "/_emulator/tasks/run-due", "", nil)
	}
	if got := sentTitles(t, a); len(got) != 1 || got[0] != "Sealed under k2" {
		t.Fatalf("after A's restart with k2 it sent %q, want the alert once", got)
	}
	if state, attempts := s.batch(t, id); state != "sent" || attempts != 1 {
		t.Fatalf("the batch is %s after %d attempts, want sent at its first", state, attempts)
	}
	if got := sentTitles(t, b); len(got) != 0 {
		t.Fatalf("B sent %q as well", got)
	}
}

// TestRotationStepsWithMixedRings runs the runbook's three steps, each with
// an instance of the revision before it and one of the revision it makes
// live at once: (1) k2 added open-only, (2) k2 seals, (3) k1 dropped. In
// each, an alert sent through either instance and delivered by the other is
// delivered, and no claim meets a key it lacks. PostgreSQL only.
func TestRotationStepsWithMixedRings(t *testing.T) {
	s := newInstances(t)
	keys := newEntries(t, "k1", "k2")
	k1, both, k2 := keys[:1], keys, keys[1:]
	steps := []struct {
		name          string
		before, after []string
		// sealBefore and sealAfter are the key ids each instance seals
		// with.
		sealBefore, sealAfter string
	}{
		{"1: add k2 open-only", ringEnv(k1, ""), ringEnv(both, ""), "k1", "k1"},
		{"2: seal with k2", ringEnv(both, ""), ringEnv(both, "k2"), "k1", "k2"},
		{"3: drop k1", ringEnv(both, "k2"), ringEnv(k2, ""), "k2", "k2"},
	}
	for i, step := range steps {
		before, after := s.start(t, step.before), s.start(t, step.after)
		fromBefore := s.send(t, before, int64(2*i+1), "from before "+step.name)
		fromAfter := s.send(t, after, int64(2*i+2), "from after "+step.name)
		for id, key := range map[string]string{fromBefore: step.sealBefore, fromAfter: step.sealAfter} {
			if got := s.sealedWith(t, id); got != key {
				t.Errorf("step %s: a batch sealed under %q, want %q", step.name, got, key)
			}
		}
		deliverOn(t, after, fromBefore)
		deliverOn(t, before, fromAfter)
		for p, want := range map[*process]string{after: "from before " + step.name, before: "from after " + step.name} {
			if got := sentTitles(t, p); len(got) != 1 || got[0] != want {
				t.Errorf("step %s: an instance sent %q, want [%q]", step.name, got, want)
			}
			if c := counters(t, p); c[obs.PayloadKeyNotHeld] != 0 || c[obs.PayloadUnopenable] != 0 {
				t.Errorf("step %s: counters %v, want no claim without its key", step.name, c)
			}
		}
		for _, id := range []string{fromBefore, fromAfter} {
			if state, _ := s.batch(t, id); state != "sent" {
				t.Errorf("step %s: batch %s, want sent", step.name, state)
			}
		}
		for _, p := range []*process{before, after} {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}
}
