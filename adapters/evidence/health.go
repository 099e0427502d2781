package evidence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	"github.com/ambitkernel/ambit/sdk/serve"
)

// Check probes every source, each within the source timeout, and reports
// every one that cannot be read now.
func (c *Core) Check(ctx context.Context) error {
	var errs []error
	for _, name := range sortedNames(c.d.Sources) {
		sctx, cancel := context.WithTimeout(ctx, c.d.SourceTimeout)
		err := c.d.Sources[name].Connector.Check(sctx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// keepHealth keeps the server's gRPC health true to the sources until ctx
// ends: SERVING while every source is readable ([Core.Check]), checked
// every interval, NOT_SERVING otherwise. A change is logged once.
func keepHealth(ctx context.Context, core *Core, srv *serve.Server, log *zap.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	serving := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := core.Check(ctx)
		if ctx.Err() != nil {
			return // shutting down: not the sources' fault
		}
		st := healthpb.HealthCheckResponse_SERVING
		if err != nil {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		for _, svc := range []string{"", evidencev1.EvidenceService_ServiceDesc.ServiceName} {
			srv.Health.SetServingStatus(svc, st)
		}
		switch {
		case err != nil && serving:
			log.Warn("sources unreadable: not serving", zap.Error(err))
		case err == nil && !serving:
			log.Info("sources readable again: serving")
		}
		serving = err == nil
	}
}
