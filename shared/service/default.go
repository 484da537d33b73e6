package service

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/obs"
)

// process is the deployed function's Service, built on first use from the
// environment. A configuration error is kept (it will not heal); a database
// that cannot be reached is retried on the next request.
type process struct {
	// mu guards svc, err and handlers.
	mu       sync.Mutex
	svc      *Service
	err      error
	handlers map[string]http.Handler
}

// deployed is the one Service of a deployed function process; see process.
var deployed process

// Serve is the framework entry of the function name: it serves
// handler(Default()), building the handler once. When the Service cannot be
// built it answers 503 dependency_unavailable.
func Serve(w http.ResponseWriter, r *http.Request, name string, handler func(*Service) http.Handler) {
	h, err := deployed.handler(name, handler)
	if err != nil {
		httpx.WriteError(w, contract.ErrDependencyUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}

func (p *process) handler(name string, build func(*Service) http.Handler) (http.Handler, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	if p.svc == nil {
		log := obs.NewLogger(os.Stdout)
		cfg, err := config.Load(os.Getenv)
		if err == nil {
			err = cfg.CheckDeployed()
		}
		if err != nil {
			log.Log(context.Background(), obs.LevelCritical, "orca_push_config_invalid", slog.String("detail", err.Error()))
			p.err = err
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		deps, err := deployedDeps(ctx, cfg, clock.Real{})
		if err != nil {
			// A key or account that cannot be read will not heal.
			log.Log(ctx, obs.LevelCritical, "orca_push_start_failed", slog.String("error", "providers"))
			p.err = err
			return nil, err
		}
		st, err := OpenStore(ctx, cfg)
		if err != nil {
			// The database may answer the next request.
			log.ErrorContext(ctx, "orca_push_start_failed", slog.String("error", "store"))
			return nil, err
		}
		deps.Config, deps.Clock, deps.Log, deps.Store, deps.Rand = cfg, clock.Real{}, log, st, rand.Reader
		svc, err := New(deps)
		if err != nil {
			st.Close()
			p.err = err
			return nil, err
		}
		p.svc = svc
		p.handlers = make(map[string]http.Handler)
		go svc.Counters.Run(context.Background(), time.Minute)
		go drainOnSIGTERM(svc)
	}
	h, ok := p.handlers[name]
	if !ok {
		h = build(p.svc)
		p.handlers[name] = h
	}
	return h, nil
}

// ShutdownGrace is how long a process waits for its running requests after
// SIGTERM: within Cloud Run's 10 s, as the reference's 9 s.
const ShutdownGrace = 9 * time.Second

// drainOnSIGTERM stops admission when Cloud Run sends SIGTERM, waits for the
// running requests within the platform's 10 s grace (9 s, as the reference
// does; a delivery still in flight near the end records a retry), flushes
// the counters and exits.
func drainOnSIGTERM(s *Service) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	s.Shutdown(ctx)
	s.Counters.Flush()
	s.Close()
	os.Exit(0)
}
