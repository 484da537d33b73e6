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
	for _, regs := range []int{1, 5} {
		b.Run(fmt.Sprintf("admission-rows/regs=%d", regs), func(b *testing.B) {
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
			recipients, batches := "", ""
			for r := range regs {
				if r > 0 {
					recipients, batches = recipients+", ", batches+", "
				}
				recipients += fmt.Sprintf("($1, 'reg%d', 1)", r)
				batches += fmt.Sprintf("($1 || '-%d', 'hostA', 'reg%d', 'alert', $2, 1, 'pending', 1, 2, 1, 1)", r, r)
			}
			run(b, func(i int64) error {
				id := strconv.FormatInt(i, 10)
				batch := &pgx.Batch{}
				batch.Queue("BEGIN")
				batch.Queue(`SELECT expires_at FROM push_sessions WHERE token_hash = $1 AND host_fingerprint = 'hostA'`, "token-hash")
				batch.Queue(`INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
					VALUES ($1, 'hostA', 'alert', 'fp', 1, 2)`, "e"+id)
				batch.Queue(`INSERT INTO push_event_recipients (event_id, registration_id, created_at) VALUES `+recipients, "e"+id)
				batch.Queue(`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id, kind,
					payload_json, members, state, due_at, expires_at, scheduled_at, created_at) VALUES `+batches, "b"+id, payload)
				batch.Queue("COMMIT")
				if err := pool.SendBatch(ctx, batch).Close(); err != nil {
					return fmt.Errorf("admission rows: %w", err)
				}
				return nil
			})
			b.ReportMetric(float64(b.N*regs)/b.Elapsed().Seconds(), "regs/s")
		})
	}
}
