package main

import (
	"context"
	"crypto/rand"
	"net/http"
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

func processInbox(t testing.TB, origin string) []standin.Delivery {
	var in struct{ Deliveries []standin.Delivery }
	emulatortest.Control(t, origin, "GET", "/_emulator/inbox", "", &in)
	return in.Deliveries
}

// TestKilledMidDelivery kills the gateway process with SIGKILL while a
// delivery is in the provider call (after the claim, before the outcome is
// recorded), starts a new process on the same PostgreSQL, and checks that the
// alert is delivered exactly once more, with the same collapse id: the lease
// expires, the sweep finds the batch whose task died with the process, and
// Cloud Tasks (here the new process's emulator) runs it.
func TestKilledMidDelivery(t *testing.T) {
	pg := storetest.Postgres(t)
	// The same data directory too: it keeps the payload key.
	env := []string{"ORCA_PUSH_DATABASE_URL=" + pg.Options(t).DatabaseURL, "ORCA_PUSH_MANUAL_CLOCK=1",
		"ORCA_PUSH_DATA_DIR=" + t.TempDir()}
	p1 := startEmulator(t, env...)
	ctx := context.Background()
	kp, _ := hostclient.GenerateKeypair(rand.Reader)
	h, err := hostclient.New(hostclient.Options{BaseURL: p1.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := h.Register(ctx, hostclient.RegisterParams{DeviceID: "phone", Platform: contract.PlatformIOS,
		Token: strings.Repeat("cd", 32), APNSEnvironment: contract.APNSProduction})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Send(ctx, []string{reg}, contract.Notification{NotificationID: "n1", Seq: 1, Epoch: "e",
		Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished, Title: "Done", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	emulatortest.Control(t, p1.origin, "POST", "/_emulator/faults", `{"provider":"apns","token":"*","hang":true}`, nil)
	emulatortest.Control(t, p1.origin, "POST", "/_emulator/clock", `{"advanceMs":3000}`, nil)
	go http.Post(p1.origin+"/_emulator/tasks/run-due", "application/json", nil) // hangs in the provider call
	var first []standin.Delivery
	for deadline := time.Now().Add(10 * time.Second); len(first) == 0; { // crossing a process boundary
		if time.Now().After(deadline) {
			t.Fatal("the alert never reached the stand-in")
		}
		first = processInbox(t, p1.origin)
	}
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p1.cmd.Wait()

	deliveredOnceMoreAfterRestart(t, env, first[0])
}

// TestKilledMidInlineDelivery is TestKilledMidDelivery for a batch delivered
// inline (ORCA_PUSH_DELIVER_INLINE=1, no coalescing): the process dies while
// the send request is in the provider call, so no task was ever made for the
// batch. The new process's sweep finds it pending once its lease and the
// grace have passed and hands it to a task: delivered exactly once more, with
// the same collapse id.
func TestKilledMidInlineDelivery(t *testing.T) {
	env, p1, h, reg := startInlineWithIPhone(t)
	ctx := context.Background()
	emulatortest.Control(t, p1.origin, "POST", "/_emulator/faults", `{"provider":"apns","token":"*","hang":true}`, nil)
	sent := make(chan error, 1)
	go func() { // hangs in the provider call, inside the send request
		_, err := h.Send(ctx, []string{reg}, contract.Notification{NotificationID: "n1", Seq: 1, Epoch: "e",
			Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished, Title: "Done", Body: "b"})
		sent <- err
	}()
	var first []standin.Delivery
	for deadline := time.Now().Add(10 * time.Second); len(first) == 0; { // crossing a process boundary
		if time.Now().After(deadline) {
			t.Fatal("the alert never reached the stand-in")
		}
		first = processInbox(t, p1.origin)
	}
	var tasks struct{ Tasks []any }
	emulatortest.Control(t, p1.origin, "GET", "/_emulator/tasks", "", &tasks)
	if len(tasks.Tasks) != 0 {
		t.Fatalf("%d tasks pending during an inline delivery, want none", len(tasks.Tasks))
	}
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p1.cmd.Wait()
	if err := <-sent; err == nil {
		t.Fatal("the send answered although its process was killed")
	}

	deliveredOnceMoreAfterRestart(t, env, first[0])
}

// deliveredOnceMoreAfterRestart starts a new emulator process with env (the
// one killed in the provider call made first) and wants the alert delivered
// exactly once more, with first's collapse id: past the 30 s lease and the
// sweep's grace the sweep finds the batch whose task died with the process,
// and nothing more goes out until the alert's deadline has passed.
func deliveredOnceMoreAfterRestart(t *testing.T, env []string, first standin.Delivery) {
	t.Helper()
	p2 := startEmulator(t, env...)
	for range 3 { // sweeps run each minute
		emulatortest.Control(t, p2.origin, "POST", "/_emulator/clock", `{"advanceMs":61000}`, nil)
		emulatortest.Control(t, p2.origin, "POST", "/_emulator/tasks/run-due", "", nil)
	}
	again := processInbox(t, p2.origin)
	if len(again) != 1 || again[0].Status != http.StatusOK {
		t.Fatalf("after the restart the stand-in got %+v, want one accepted request", again)
	}
	if a, b := first.Headers["apns-collapse-id"], again[0].Headers["apns-collapse-id"]; a == "" || a != b {
		t.Fatalf("collapse ids %q and %q, want the same", a, b)
	}
	emulatortest.Control(t, p2.origin, "POST", "/_emulator/clock", `{"advanceMs":300000}`, nil)
	emulatortest.Control(t, p2.origin, "POST", "/_emulator/tasks/run-due", "", nil)
	if n := len(processInbox(t, p2.origin)); n != 1 {
		t.Fatalf("%d requests in the end, want 1", n)
	}
}

// startInlineWithIPhone starts the emulator process on a PostgreSQL schema
// of t's with inline delivery and no coalescing, as production runs, and a
// host with one iPhone registered; it returns the process's environment (for
// a restart on the same database), the process, the host and the
// registration.
func startInlineWithIPhone(t *testing.T) ([]string, *process, *hostclient.Client, string) {
	t.Helper()
	pg := storetest.Postgres(t)
	env := []string{"ORCA_PUSH_DATABASE_URL=" + pg.Options(t).DatabaseURL, "ORCA_PUSH_MANUAL_CLOCK=1",
		"ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_DELIVER_INLINE=1", "ORCA_PUSH_DATA_DIR=" + t.TempDir()}
	p := startEmulator(t, env...)
	kp, _ := hostclient.GenerateKeypair(rand.Reader)
	h, err := hostclient.New(hostclient.Options{BaseURL: p.origin, Keypair: kp, HTTPClient: http.DefaultClient, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := h.Register(context.Background(), hostclient.RegisterParams{DeviceID: "phone", Platform: contract.PlatformIOS,
		Token: strings.Repeat("cd", 32), APNSEnvironment: contract.APNSProduction})
	if err != nil {
		t.Fatal(err)
	}
	return env, p, h, reg
}
