// Package service is the process's dependency set: configuration, clock,
// store, the HTTP edge, host authentication, counters and, for delivery, the
// scheduler and providers. Each function package exports
// Handler(*Service), so the deployed entry point, the emulator and tests mount
// the same handler with their own Service.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/hostauth"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/tasks"
)

// Service holds everything a function needs. Its fields are set by New and
// never change.
type Service struct {
	Config   config.Config
	Clock    clock.Clock
	Log      *slog.Logger
	Counters *obs.Counters
	Store    *store.Store
	Edge     *httpx.Edge
	Auth     *hostauth.Service
	// Admission accepts /v1/send.
	Admission *delivery.Admission
	// Receipts answers /v1/receipts.
	Receipts *delivery.Receipts
	// Deliverer delivers batches for the deliver function.
	Deliverer *delivery.Deliverer
	// Sweeper is the sweep function's work.
	Sweeper *delivery.Sweeper
}

// Options are the parts a caller supplies; New builds the rest. Every field
// but Rejected is required: a platform without credentials gets
// delivery.Unconfigured, a process without a task queue
// delivery.NopScheduler, so that the choice is the caller's and visible.
type Options struct {
	Config config.Config
	Clock  clock.Clock
	Log    *slog.Logger
	// Store is the open store ([OpenStore] opens the one Config names).
	Store *store.Store
	// Rand is the randomness source: crypto/rand.Reader outside tests.
	Rand io.Reader
	// Scheduler receives the batches admission and delivery commit.
	Scheduler delivery.Scheduler
	// APNS and FCM send to the providers.
	APNS delivery.Provider
	FCM  delivery.Provider
	// Rejected is httpx.Options.Rejected: the one optional field, set by the
	// emulator to print why a request was refused, left unset by deployed
	// functions, which log counters only.
	Rejected func(route, reason string)
}

// OpenStore opens the store cfg names and applies pending migrations.
func OpenStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	st, err := store.Open(ctx, store.Options{
		DatabaseURL:      cfg.DatabaseURL,
		CloudSQLInstance: cfg.CloudSQLInstance,
		DataDir:          cfg.DataDir,
		PoolMax:          cfg.PoolMax,
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return st, nil
}

// New builds a Service over the given parts.
func New(o Options) (*Service, error) {
	if o.Clock == nil || o.Log == nil || o.Store == nil || o.Rand == nil || o.Scheduler == nil || o.APNS == nil || o.FCM == nil ||
		o.Config.PayloadKeys == nil || o.Config.DigestKey == nil {
		return nil, errors.New("service: New needs Clock, Log, Store, Rand, Scheduler, APNS, FCM, Config.PayloadKeys and Config.DigestKey")
	}
	st := o.Store
	s := &Service{Config: o.Config, Clock: o.Clock, Log: o.Log, Counters: obs.NewCounters(o.Log), Store: st}
	st.ObserveGroups(func(members int, failed bool) {
		s.Counters.Add(obs.SharedTxMembers, int64(members))
		if failed {
			s.Counters.Add(obs.SharedTxFailed, int64(members))
		}
	})
	var err error
	s.Auth, err = hostauth.NewService(hostauth.Options{
		Store: st, Clock: o.Clock, Counters: s.Counters, Origin: o.Config.PublicURL, Rand: o.Rand,
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	s.Deliverer, err = delivery.NewDeliverer(delivery.DelivererOptions{
		Store: st, Clock: o.Clock, Counters: s.Counters, Scheduler: o.Scheduler, APNS: o.APNS, FCM: o.FCM,
		Keys: o.Config.PayloadKeys,
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	admit, budget := o.Scheduler, time.Duration(0)
	if o.Config.DeliverInline {
		if admit, err = delivery.NewInline(s.Deliverer, o.Scheduler, o.Clock); err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
		budget = delivery.InlineBudget
	}
	s.Admission, err = delivery.NewAdmission(delivery.Options{
		Store: st, Clock: o.Clock, Counters: s.Counters, Scheduler: admit, Coalesce: o.Config.Coalesce,
		Keys: o.Config.PayloadKeys, Digest: o.Config.DigestKey, Budget: budget,
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	s.Receipts, err = delivery.NewReceipts(delivery.ReceiptsOptions{Store: st, Clock: o.Clock, Counters: s.Counters})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	s.Sweeper, err = delivery.NewSweeper(delivery.SweeperOptions{
		Store: st, Clock: o.Clock, Counters: s.Counters, Scheduler: o.Scheduler,
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	s.Edge, err = httpx.NewEdge(httpx.Options{
		Clock: o.Clock, Counters: s.Counters, Log: o.Log,
		TrustedProxyHops: o.Config.TrustedProxyHops,
		Ready:            st.Ping,
		Lookup:           s.Auth.Lookup,
		Rejected:         o.Rejected,
		TraceProject:     traceProject(o.Config.TasksQueue),
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return s, nil
}

// Close releases the store.
func (s *Service) Close() error { return s.Store.Close() }

// haltMargin is the part of a shutdown's time kept for deliveries whose
// provider calls were cut short to record their outcome.
const haltMargin = 2 * time.Second

// Shutdown stops taking requests (new ones answer 503 shutting_down, so
// Cloud Tasks retries a delivery elsewhere) and waits for the running ones
// until ctx ends. A delivery still waiting for its provider haltMargin before
// ctx's deadline is cut short and records a retry, releasing its lease, so
// nothing is left held when the process exits. It returns ctx's error when
// requests were still running at the end.
func (s *Service) Shutdown(ctx context.Context) error {
	wait := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, deadline.Add(-haltMargin))
		defer cancel()
	}
	if err := s.Edge.Drain(wait); err == nil {
		return nil
	}
	s.Deliverer.Halt()
	return s.Edge.Drain(ctx)
}

// traceProject is the Google Cloud project of the first delivery queue
// ORCA_PUSH_TASKS_QUEUE names, which is where the gateway runs; empty
// outside Google Cloud.
func traceProject(queues string) string {
	qs := tasks.ParseQueues(queues)
	if len(qs) == 0 {
		return ""
	}
	return tasks.Project(qs[0])
}
