package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestSIGTERMMidDelivery signals the emulator process while a delivery waits
// on a provider that does not answer. The process stops taking work, cuts
// the provider call short near the end of its grace, records the delivery as
// a retry, and exits 0: the batch is left pending for its next attempt with
// no lease held, not held for a lease no process will end.
func TestSIGTERMMidDelivery(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			env := []string{"ORCA_PUSH_COALESCE_MS=0"}
			if opts.DatabaseURL != "" {
				env = append(env, "ORCA_PUSH_DATABASE_URL="+opts.DatabaseURL)
			} else {
				env = append(env, "ORCA_PUSH_DATA_DIR="+opts.DataDir)
			}
			p := startEmulator(t, env...)
			e := newLiveEmulator(t, p)
			reg := e.phone(t, "phone")
			emulatortest.Control(t, p.origin, "POST", "/_emulator/faults", `{"provider":"apns","token":"*","hang":true,"times":5}`, nil)
			e.send(t, alert("n1", 1), reg)
			// Wait (across the process boundary) for the provider call to
			// be in flight.
			for end := time.Now().Add(realClockWait); len(processInbox(t, p.origin)) == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("the delivery never reached the stand-in")
				}
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			exited := make(chan error, 1)
			go func() { exited <- p.cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit after SIGTERM: %v", err)
				}
			case <-time.After(3 * contract.ProviderTimeout): // a process boundary
				t.Fatal("the emulator did not exit after SIGTERM")
			}
			st, err := store.Open(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			batches, err := st.RegistrationBatches(context.Background(), reg)
			if err != nil || len(batches) != 1 {
				t.Fatalf("RegistrationBatches = %+v, %v; want one batch", batches, err)
			}
			if b := batches[0]; b.State != store.BatchPending || b.LeaseToken != "" || b.Attempts != 1 {
				t.Fatalf("batch after the shutdown = state %s, lease %q, %d attempts; want pending for a retry, no lease, 1 attempt",
					b.State, b.LeaseToken, b.Attempts)
			}
		})
	}
}
