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

// BenchmarkAdmissionFloor bounds what admitting one registration of a new
// alert can cost on PostgreSQL, whatever the code: the bearer's session read
// (through the store) and one transaction writing the three rows the
// contract's tables need (event, recipient, batch) with no check, no lock
// and no other statement, pipelined in one round trip with BEGIN and COMMIT.
// Beside it, in the same run, the insert ceiling of BenchmarkInsertCeiling
// (one row in one transaction). Their ratio is the most BenchmarkSendAdmission
// with one registration per request could reach against that ceiling.
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
	})
	b.Run("admission-rows", func(b *testing.B) {
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
		run(b, func(i int64) error {
			host, _, err := s.Session(ctx, "token-hash")
			if err != nil {
				return err
			}
			id := strconv.FormatInt(i, 10)
			batch := &pgx.Batch{}
			batch.Queue("BEGIN")
			batch.Queue(`INSERT INTO push_events (event_id, host_fingerprint, kind, fingerprint, created_at, expires_at)
				VALUES ($1, $2, 'alert', 'fp', 1, 2)`, "e"+id, host)
			batch.Queue(`INSERT INTO push_event_recipients (event_id, registration_id, created_at)
				VALUES ($1, 'reg', 1)`, "e"+id)
			batch.Queue(`INSERT INTO push_delivery_batches (batch_id, host_fingerprint, registration_id, kind,
				payload_json, members, state, due_at, expires_at, scheduled_at, created_at)
				VALUES ($1, $2, 'reg', 'alert', $3, 1, 'pending', 1, 2, 1, 1)`, "b"+id, host, payload)
			batch.Queue("COMMIT")
			if err := pool.SendBatch(ctx, batch).Close(); err != nil {
				return fmt.Errorf("admission rows: %w", err)
			}
			return nil
		})
	})
}
