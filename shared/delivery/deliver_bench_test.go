package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// maxBenchRegistrations bounds the registrations BenchmarkDeliver sets up.
const maxBenchRegistrations = 8192

// deliverWorkers is how many deliveries run at once in BenchmarkDeliver, as
// Cloud Tasks would dispatch them to one instance.
const deliverWorkers = 16

// BenchmarkDeliver measures delivery throughput on each database: claim →
// APNs stand-in → record, deliverWorkers at once, each batch of its own
// registration (see pendingBatches); and, in the same run, the provider client alone sending the
// same message to the same stand-in ("bare"), the ceiling delivery is judged
// against; and the least a durable delivery must write ("two-write": its
// claim and its outcome), which bounds what any design recording both can
// reach.
func BenchmarkDeliver(b *testing.B) {
	key, err := standin.GenerateAPNSKey()
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.Real{}
	st, err := standin.Start(standin.Options{Clock: clk, APNSKey: key, APNSKeyID: "BENCHKEY01", APNSTeamID: "BENCHTEAM1", InboxLimit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	client, err := apns.New(apns.Options{Key: key, KeyID: "BENCHKEY01", TeamID: "BENCHTEAM1", Clock: clk,
		SandboxURL: st.APNSURL(contract.APNSSandbox), ProductionURL: st.APNSURL(contract.APNSProduction), RootCAs: st.RootCAs()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	token := strings.Repeat("ab", 32)
	n := contract.Notification{NotificationID: "n", Seq: 1, Epoch: "e", Source: contract.SourcePlugin,
		AgentState: contract.AgentFinished, Title: "Build finished", Body: "All green"}

	for _, d := range storetest.Dialects(b) {
		b.Run(d.Name, func(b *testing.B) {
			s := storetest.Open(b, d)
			ctx := context.Background()
			counters := obs.NewCounters(slog.New(slog.NewJSONHandler(io.Discard, nil)))
			dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(b), Store: s, Clock: clk, Counters: counters,
				Scheduler: delivery.NopScheduler{}, APNS: client, FCM: delivery.Unconfigured("fcm")})
			if err != nil {
				b.Fatal(err)
			}
			queue := pendingBatches(b, s, token, n, clk.Now().UnixMilli())
			b.ResetTimer()
			b.SetParallelism((deliverWorkers + 1) / 2)
			done := reportCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := dl.Deliver(ctx, <-queue); err != nil {
						b.Error(err)
					}
				}
			})
			done()
			// A provider hiccup under load is retried, not lost; it shows
			// here as a batch not sent within the run.
			all := counters.Consume()
			sent := all[obs.DeliverySent]
			b.ReportMetric(float64(int64(b.N)-sent), "not-sent")
			if sent != int64(b.N) {
				b.Logf("counters: %v", all)
			}
			if sent < int64(b.N)*99/100 {
				b.Fatalf("sent %d of %d", sent, b.N)
			}
		})
	}
	// The least any durable delivery must write: the claim (a lease) before
	// the provider call and the outcome after it, as two single-row UPDATEs,
	// each committed on its own, with no lock, no read and no provider
	// call, at the same concurrency. Its rate bounds every design that
	// records each claim and outcome durably. "two-write+send" also makes
	// the provider call between the two, with the message built once: the
	// least a whole delivery costs on a machine where the provider's
	// stand-in shares the cores.
	m := push.Build("host00", []contract.Notification{n}, clk.Now().Add(time.Hour).UnixMilli())
	target := push.Target{Platform: contract.PlatformIOS, Token: token, APNSEnvironment: contract.APNSSandbox}
	for _, c := range []struct {
		name string
		send bool
	}{{"two-write", false}, {"two-write+send", true}} {
		for _, d := range storetest.Dialects(b) {
			b.Run(d.Name+"/"+c.name, func(b *testing.B) { benchTwoWrites(b, d, token, n, c.send, client, target, m) })
		}
	}
	b.Run("bare", func(b *testing.B) {
		b.SetParallelism((deliverWorkers + 1) / 2)
		defer reportCPU(b)()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if o := client.Send(context.Background(), target, m); o.Kind != push.Sent {
					b.Errorf("Send = %+v", o)
				}
			}
		})
	})
}

// benchTwoWrites is BenchmarkDeliver's floor: per batch, the claim and the
// outcome as two single-row UPDATEs committed on their own, and with send
// the provider call between them.
func benchTwoWrites(b *testing.B, d storetest.Dialect, token string, n contract.Notification, send bool, client *apns.Client,
	target push.Target, m push.Message) {
	opts := d.Options(b)
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	db := storetest.SQL(b, opts)
	if opts.PoolMax > 0 {
		// As many connections as the store has, all kept: database/sql
		// keeps two idle by default, and with deliverWorkers at once the
		// others would be closed and dialled again, which is no floor.
		db.SetMaxOpenConns(opts.PoolMax)
		db.SetMaxIdleConns(opts.PoolMax)
	}
	now := clock.Real{}.Now().UnixMilli()
	queue := pendingBatches(b, s, token, n, now)
	ctx := context.Background()
	b.ResetTimer()
	b.SetParallelism((deliverWorkers + 1) / 2)
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := <-queue
			if _, err := db.ExecContext(ctx, `UPDATE push_delivery_batches
				SET lease_token = $2, lease_until = $3, attempts = attempts + 1 WHERE batch_id = $1`,
				id, "floor", now+contract.LeaseDuration.Milliseconds()); err != nil {
				b.Error(err)
			}
			if send {
				if o := client.Send(ctx, target, m); o.Kind != push.Sent {
					b.Errorf("Send = %+v", o)
				}
			}
			if _, err := db.ExecContext(ctx, `UPDATE push_delivery_batches SET state = 'sent',
				payload_json = '[]', finished_at = $2, lease_token = NULL, lease_until = 0 WHERE batch_id = $1`,
				id, now); err != nil {
				b.Error(err)
			}
		}
	})
}

// reportCPU starts measuring CPU time and returns the function that stops
// the timer and reports it per op: cpu-ns/op is the benchmark process's own
// (the gateway's and the in-process stand-in's), db-cpu-ns/op the rest of
// the machine's, on a quiet machine the database server's.
func reportCPU(b *testing.B) func() {
	cpu, machine := pushtest.CPUTime(), pushtest.MachineCPUTime()
	return func() {
		b.StopTimer()
		cpu, machine = pushtest.CPUTime()-cpu, pushtest.MachineCPUTime()-machine
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(machine-cpu)/float64(b.N), "db-cpu-ns/op")
	}
}

// pendingBatches stores b.N due alert batches of n, sealed as admission
// seals them, and returns their
// ids in a queue, each batch of its own registration and host (round-robin
// past maxBenchRegistrations), as in steady traffic: neither the
// one-in-flight rule nor the host lock holds a worker back, and a claim
// finds no other pending batch of its registration.
func pendingBatches(b *testing.B, s *store.Store, token string, n contract.Notification, now int64) chan string {
	b.Helper()
	ctx := context.Background()
	regs := make([]string, min(b.N, maxBenchRegistrations))
	for i := range regs {
		var err error
		regs[i], err = s.RegisterDevice(ctx, fmt.Sprintf("host%d", i), contract.RegisterRequest{
			DeviceID: fmt.Sprintf("phone%d", i), Platform: contract.PlatformIOS, Token: token,
			APNSEnvironment: contract.APNSSandbox}, 1)
		if err != nil {
			b.Fatal(err)
		}
	}
	queue := make(chan string, b.N)
	for i := range b.N {
		r := i % len(regs)
		host := fmt.Sprintf("host%d", r)
		id := uuid.NewString()
		err := s.HostTx(ctx, host, func(tx *store.Tx) error {
			_, err := tx.InsertBatch(ctx, store.NewBatch{ID: id, Host: host, RegistrationID: regs[r],
				Kind: contract.KindAlert, Payload: delivery.SealedPayload(sealtest.Ring(b), id, regs[r], n), Members: 1, DueAt: now,
				ExpiresAt: now + time.Hour.Milliseconds()}, now)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		queue <- id
	}
	return queue
}
