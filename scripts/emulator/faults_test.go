package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// pendingBatch returns the batch id of the one pending task.
func (e *emu) pendingBatch() string {
	e.t.Helper()
	tasks := e.em.local.tasks.Tasks()
	if len(tasks) != 1 {
		e.t.Fatalf("%d pending tasks, want 1", len(tasks))
	}
	var body struct{ BatchID string }
	if err := json.Unmarshal([]byte(tasks[0].Body), &body); err != nil {
		e.t.Fatal(err)
	}
	return body.BatchID
}

func (e *emu) setClock(ms int64) {
	e.t.Helper()
	e.call("POST", "/_emulator/clock", `{"advanceMs":`+itoa(ms)+`}`, nil)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A deliverer that died after claiming, before calling the provider, leaves
// a leased batch: it is delivered once, when the lease ends.
func TestCrashAfterClaim(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			ctx := context.Background()
			reg := e.registerIOS("phone")
			e.send(reg, alert("n1", 1))
			id := e.pendingBatch()
			e.setClock(3000)
			// The claim, exactly as a deliverer makes it, and then nothing.
			b, _ := e.em.svc.Store.Batch(ctx, id)
			err := e.em.svc.Store.HostTx(ctx, b.Host, func(tx *store.Tx) error {
				_, err := tx.LeaseBatch(ctx, id, "dead-deliverer", e.clk.Now().Add(contract.LeaseDuration).UnixMilli())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			e.advance(0)
			if n := len(e.inbox()); n != 0 {
				t.Fatalf("sent %d while leased, want 0", n)
			}
			e.advance(contract.LeaseDuration.Milliseconds() - 1)
			if n := len(e.inbox()); n != 0 {
				t.Fatalf("sent %d before the lease ended, want 0", n)
			}
			e.advance(1)
			for range 5 {
				e.advance(60_000)
			}
			if n := len(e.inbox()); n != 1 {
				t.Fatalf("sent %d, want exactly 1 after the lease ended", n)
			}
		})
	}
}

// A deliverer that died after the provider accepted, before recording it,
// leaves the batch pending under its lease: it is sent once more, with the
// same collapse id, and no more.
func TestCrashAfterProviderAccepted(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	ctx := context.Background()
	reg := e.registerIOS("phone")
	e.send(reg, alert("n1", 1))
	id := e.pendingBatch()
	before, _ := e.em.svc.Store.Batch(ctx, id)
	e.advance(3000)
	if n := len(e.inbox()); n != 1 {
		t.Fatalf("sent %d, want 1", n)
	}
	// Put the row back as the crash left it: pending, payload kept, leased.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.em.svc.Config.DataDir, store.SQLiteFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE push_delivery_batches SET state = 'pending', payload_json = $1, finished_at = NULL,
		lease_token = 'dead', lease_until = $2, attempts = 1 WHERE batch_id = $3`,
		before.Payload, e.clk.Now().Add(contract.LeaseDuration).UnixMilli(), id); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.advance(60_000) // the sweep finds it once the lease has ended
	}
	in := e.inbox()
	if len(in) != 2 {
		t.Fatalf("sent %d, want the original and one duplicate", len(in))
	}
	if a, b := in[0].Headers["apns-collapse-id"], in[1].Headers["apns-collapse-id"]; a == "" || a != b {
		t.Fatalf("collapse ids %q and %q, want the same", a, b)
	}
}

// When CreateTask fails after the send committed, the sweep delivers.
func TestLostTaskIsSwept(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			reg := e.registerIOS("phone")
			e.em.local.tasks.FailCreates(3, codes.Unavailable) // every attempt of one Schedule
			if s := e.send(reg, alert("n1", 1)); s != contract.StatusQueued {
				t.Fatalf("send = %s, want queued", s)
			}
			if n := len(e.em.local.tasks.Tasks()); n != 0 {
				t.Fatalf("%d tasks, want none (CreateTask failed)", n)
			}
			e.advance(3000)
			if n := len(e.inbox()); n != 0 {
				t.Fatalf("sent %d without a task", n)
			}
			for range 3 {
				e.advance(60_000)
			}
			if n := len(e.inbox()); n != 1 {
				t.Fatalf("sent %d, want 1 after the sweep", n)
			}
		})
	}
}

// A send that meets an unavailable database answers 5xx and leaves no
// partial rows: the transaction commits all or nothing.
func TestDatabaseUnavailableDuringSend(t *testing.T) {
	pg := storetest.Postgres(t)
	e := startEmu(t, pg)
	ctx := context.Background()
	reg := e.registerIOS("phone")
	before, err := e.em.svc.Store.RowCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the batches table so the send's transaction cannot finish: it
	// writes the event first, then gives up on the lock and rolls back.
	release := storetest.LockTable(t, store.Options{DatabaseURL: e.em.svc.Config.DatabaseURL}, "push_delivery_batches")
	_, sendErr := e.host.Send(ctx, []string{reg}, alert("n1", 1))
	release()
	if sendErr == nil {
		t.Fatal("send succeeded with the database unavailable")
	}
	after, err := e.em.svc.Store.RowCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"push_events", "push_event_recipients", "push_delivery_batches"} {
		if after[table] != before[table] {
			t.Errorf("%s: %d rows before, %d after a failed send", table, before[table], after[table])
		}
	}
	// And the same send goes through once the database is back.
	if s := e.send(reg, alert("n1", 1)); s != contract.StatusQueued {
		t.Fatalf("send after recovery = %s", s)
	}
}

// A dismissal accepted while its alert is in flight, whose provider then
// fails: the alert is not retried and the dismissal is delivered.
func TestDismissalWhileAlertInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the APNs client's 10 s timeout")
	}
	e := startEmu(t, storetest.Dialects(t)[0])
	reg := e.registerIOS("phone")
	e.fault(`{"provider":"apns","token":"*","hang":true,"times":1}`)
	e.send(reg, alert("n1", 1))
	e.setClock(3000)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); e.call("POST", "/_emulator/tasks/run-due", "", nil) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(e.inbox()) == 0 { // the alert reaches the stand-in, which holds it
		if time.Now().After(deadline) {
			t.Fatal("the alert never reached the stand-in")
		}
		time.Sleep(5 * time.Millisecond)
	}
	dismiss := alert("n1", 1)
	dismiss.Kind = contract.KindDismiss
	if s := e.send(reg, dismiss); s != contract.StatusQueued {
		t.Fatalf("dismissal = %s", s)
	}
	wg.Wait() // the alert's attempt times out: a retryable failure
	for range 40 {
		e.advance(1000)
	}
	in := e.inbox()
	if len(in) != 2 {
		t.Fatalf("sent %d, want the hung alert and the dismissal", len(in))
	}
	if in[1].Headers["apns-push-type"] != "background" {
		t.Fatalf("second request = %v, want the dismissal", in[1].Headers)
	}
}
