package service

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ambitkernel/ambit/sdk/serve"
)

// healthChecks keeps the gRPC health of a process's servers true to what
// it can do: a service is SERVING only while every probe that gates it
// passes.
type healthChecks struct {
	log    *zap.Logger
	checks []healthCheck
	// servers are the process's TLS servers; plain, when set, the
	// plaintext health listener, which reports every service.
	servers []*serve.Server
	plain   *serve.Server

	mu   sync.Mutex
	down map[string]bool // by check name, for logging changes only
}

type healthCheck struct {
	name     string
	probe    func(context.Context) error
	services []string // empty: every service
}

func newHealthChecks(log *zap.Logger) *healthChecks {
	return &healthChecks{log: log, down: map[string]bool{}}
}

func (h *healthChecks) add(name string, probe func(context.Context) error, services []string) {
	h.checks = append(h.checks, healthCheck{name: name, probe: probe, services: services})
}

// loop probes every interval until ctx ends.
func (h *healthChecks) loop(ctx context.Context, interval time.Duration) {
	if len(h.checks) == 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.update(ctx, interval)
		}
	}
}

// update runs every probe, each bounded by interval, and sets the
// statuses.
func (h *healthChecks) update(ctx context.Context, interval time.Duration) {
	failed := map[string]bool{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range h.checks {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, interval)
			defer cancel()
			err := c.probe(pctx)
			if ctx.Err() != nil {
				return // shutting down: not the dependency's fault
			}
			mu.Lock()
			failed[c.name] = err != nil
			mu.Unlock()
			h.report(c.name, err)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	all := true
	for _, f := range failed {
		all = all && !f
	}
	status := func(ok bool) healthpb.HealthCheckResponse_ServingStatus {
		if ok {
			return healthpb.HealthCheckResponse_SERVING
		}
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	serving := func(service string) bool {
		for _, c := range h.checks {
			if failed[c.name] && (len(c.services) == 0 || slices.Contains(c.services, service)) {
				return false
			}
		}
		return true
	}
	for _, s := range h.servers {
		s.Health.SetServingStatus("", status(all))
		for _, svc := range s.Services() {
			ok := serving(svc)
			s.Health.SetServingStatus(svc, status(ok))
			if h.plain != nil {
				h.plain.Health.SetServingStatus(svc, status(ok))
			}
		}
	}
	if h.plain != nil {
		h.plain.Health.SetServingStatus("", status(all))
	}
}

// report logs a probe's result when it changes.
func (h *healthChecks) report(name string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	was, seen := h.down[name]
	h.down[name] = err != nil
	switch {
	case err != nil && !was:
		h.log.Warn("dependency unavailable", zap.String("check", name), zap.Error(err))
	case err == nil && was && seen:
		h.log.Info("dependency available again", zap.String("check", name))
	}
}
