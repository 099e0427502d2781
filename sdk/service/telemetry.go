package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// telemetry is a process's metrics and tracing. Nothing is global: the
// registry, the tracer provider and the propagator are handed to the
// servers and connections the process makes.
type telemetry struct {
	registry      *prometheus.Registry
	serverMetrics *grpcprom.ServerMetrics
	clientMetrics *grpcprom.ClientMetrics

	tracer     trace.TracerProvider
	propagator propagation.TextMapPropagator
	shutdown   func(context.Context) error
	out        io.Closer
	// profiling serves the runtime profiles beside the metrics.
	profiling bool
}

func newTelemetry(name string, cfg Common) (*telemetry, error) {
	t := &telemetry{
		registry: prometheus.NewRegistry(),
		serverMetrics: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets([]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}))),
		clientMetrics: grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets([]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}))),
		// W3C trace context: what otelgrpc's other ends expect.
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		tracer:     noop.NewTracerProvider(),
		shutdown:   func(context.Context) error { return nil },
		profiling:  cfg.Profiling,
	}
	t.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		t.serverMetrics, t.clientMetrics,
	)
	var w io.Writer
	switch cfg.Tracing {
	case TracingStdout:
		w = os.Stdout
	case TracingFile:
		f, err := os.OpenFile(cfg.TracingFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		w, t.out = f, f
	default:
		return t, nil
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", name),
		attribute.String("service.instance.id", cfg.Identity),
	)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tracer, t.shutdown = tp, tp.Shutdown
	return t, nil
}

func (t *telemetry) otelOptions() []otelgrpc.Option {
	return []otelgrpc.Option{otelgrpc.WithTracerProvider(t.tracer), otelgrpc.WithPropagators(t.propagator)}
}

// serveMetrics serves /metrics on l until ctx ends, then shuts down
// within grace.
func (t *telemetry) serveMetrics(ctx context.Context, l net.Listener, grace time.Duration) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{Registry: t.registry}))
	if t.profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve metrics: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// close flushes the spans not yet written.
func (t *telemetry) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := t.shutdown(ctx)
	if t.out != nil {
		err = errors.Join(err, t.out.Close())
	}
	return err
}
