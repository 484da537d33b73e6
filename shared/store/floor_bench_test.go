package store_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// floorWorkers is the concurrency of BenchmarkAdmissionFloor, that of
// BenchmarkSendAdmission (16 hosts).
const floorWorkers = 16

// BenchmarkAdmissionFloor bounds what admitting one /v1/send of a new alert
// to regs registrations can cost on PostgreSQL, whatever the code: one
// transaction, pipelined in one round trip, that reads the bearer's session
// and writes the rows the contract's tables need (the event, a recipient and
// a batch per registration, each table's rows in one multi-row INSERT) with
// no check, no lock and no other statement. Beside it, in the same run, the
// insert ceiling of BenchmarkInsertCeiling (one row in one transaction).
// Their ratio, in registrations per second against transactions per second,
// is the most BenchmarkSendAdmission could reach against that ceiling.
//
// The requests=4 cases write four requests' rows in one transaction (four
// session reads, and each table's rows of all four in one INSERT): the floor
// of a design that would admit the requests arriving together in one
// commit, which one request per transaction cannot pass.
func BenchmarkAdmissionFloor(b *testing.B) {
	pg := storetest.Postgres(b)
	ctx := context.Background()
	run := func(b *testing.B, op func(i int64) error) {
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((floorWorkers + procs - 1) / procs)
		var next atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(next.Add(1)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("ceiling", func(b *testing.B) {
		s := storetest.Open(b, pg)
		run(b, func(i int64) error {
			return s.Tx(ctx, func(tx *store.Tx) error {
				return tx.TouchHost(ctx, "host-"+strconv.FormatInt(i, 10), "key", 1)
			})
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	})
	for _, c := range []struct{ regs, requests int }{{1, 1}, {5, 1}, {1, 4}, {5, 4}} {
		name := fmt.Sprintf("admission-rows/regs=%d", c.regs)
		if c.requests > 1 {
			name += fmt.Sprintf("/requests=%d", c.requests)
		}
		b.Run(name, func(b *testing.B) {
			opts := pg.Options(b)
			s, err := store.Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			pool, err := pgxpool.New(ctx, opts.DatabaseURL)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(pool.Close)
			if err := s.HostTx(ctx, "hostA", func(tx *store.Tx) error {
				return tx.ReplaceSession(ctx, "hostA", "token-hash", 1<<62, 1)
			}); err != nil {
				b.Fatal(err)
			}
			payload := `[{"notificationId":"n","notificationSeq":1,"title":"Build finished","body":"All green"}]`
			// Each request's rows carry its own ids, $1 || '-q' for the
			// q-th request of the transaction.
			events, recipients, batches := "", "", ""
			for q := range c.requests {
				if q > 0 {
					events += ", "
				}
				events += fmt.Sprintf("($1 || '-%d', 'hostA', 'alert', 'fp', 1, 2)", q)
				for r := range c.regs {
					if q > 0 || r > 0 {
						recipients, batches = recipients+", ", batches+", "
					}
					recipients += fmt.Sprintf("($1 || '-%d', 'reg%d', 1)", q, r)
					batches += fmt.Sprintf("($1 || '-%d-%d', 'hostA', 'reg%d', 'alert', $2, 1, 'pending', 1, 2, 1, 1)", q, r, r)
				}
			}
			run(b, func(i int64) error {
				id := strconv.FormatInt(i, 10)
				batch := &pgx.Batch{}
				batch.Queue("BEGIN")
				for range c.requests {
					batch.Queue(`SELECT expires_at FROM push_sessions WHERE token_hash = $1 AND host_fingerprint = 'hostA'`, "token-hash")
				}
				batch.Queue(`INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
					VALUES `+events, "e"+id)
				batch.Queue(`INSERT INTO push_event_recipients (event_id, registration_id, created_at) VALUES `+recipients, "e"+id)
				batch.Queue(`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id, kind,
					payload_json, members, state, due_at, expires_at, scheduled_at, created_at) VALUES `+batches, "b"+id, payload)
				batch.Queue("COMMIT")
				if err := pool.SendBatch(ctx, batch).Close(); err != nil {
					return fmt.Errorf("admission rows: %w", err)
				}
				return nil
			})
			b.ReportMetric(float64(b.N*c.regs*c.requests)/b.Elapsed().Seconds(), "regs/s")
		})
	}
}
