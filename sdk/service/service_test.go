package service_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
	"github.com/ambitkernel/ambit/sdk/upstream"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// appConfig is a service's configuration as the binaries write theirs:
// the shared keys inline, plus keys of its own.
type appConfig struct {
	service.Config `json:",inline"`
	Database       string `json:"database"`
}

func (c *appConfig) ApplyDefaults() { c.Config.ApplyDefaults("app") }

func (c *appConfig) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.Database == "" {
		errs = append(errs, errors.New("database is required"))
	}
	return errors.Join(errs...)
}

var _ service.File = (*appConfig)(nil)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigInline(t *testing.T) {
	var got appConfig
	err := config.LoadChecked(writeFile(t, `
identity: x
pki_dir: pki
listen: 127.0.0.1:7201
addr_file: x.addr
kernel: 127.0.0.1:7001
kernel_timeout: 1s
log_level: warn
shutdown_grace: 2s
reflection: true
gc_headroom_mb: 32
database: d.db
`), nil, &got)
	if err != nil {
		t.Fatal(err)
	}
	want := appConfig{Config: service.Config{
		Common: service.Common{Identity: "x", PKIDir: "pki", AddrFile: "x.addr", LogLevel: "warn", ShutdownGrace: config.Duration(2 * time.Second),
			Reflection: true, HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff, GCHeadroomMB: 32},
		Listen: "127.0.0.1:7201", Kernel: "127.0.0.1:7001", KernelTimeout: config.Duration(time.Second),
	}, Database: "d.db"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadChecked (-want +got):\n%s", diff)
	}

	var minimal appConfig
	if err := config.LoadChecked(writeFile(t, "pki_dir: p\nkernel: k\ndatabase: d\n"), nil, &minimal); err != nil {
		t.Fatal(err)
	}
	wantMin := appConfig{Config: service.Config{
		Common: service.Common{Identity: "app", PKIDir: "p", ShutdownGrace: config.Duration(service.DefaultShutdownGrace),
			HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff, GCHeadroomMB: service.DefaultGCHeadroomMB},
		Listen: service.DefaultListen, Kernel: "k", KernelTimeout: config.Duration(service.DefaultKernelTimeout),
	}, Database: "d"}
	if diff := cmp.Diff(wantMin, minimal); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}

	// Embedding must not loosen strictness: an unknown key is still an
	// error that names it, whether it looks like a shared key or not.
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"unknown key":             {"pki_dir: p\nkernel: k\ndatabase: d\nverbose: true\n", []string{"line 4: verbose: unknown key"}},
		"misspelt shared key":     {"pki_dir: p\nkernel: k\ndatabase: d\nkernal_timeout: 3s\n", []string{"line 4: kernal_timeout: unknown key"}},
		"nested shared struct":    {"pki_dir: p\nkernel: k\ndatabase: d\nconfig: {identity: x}\n", []string{"line 4: config: unknown key"}},
		"missing required":        {"log_level: info\n", []string{"pki_dir is required", "kernel is required", "database is required"}},
		"bad duration":            {"pki_dir: p\nkernel: k\ndatabase: d\nshutdown_grace: soon\n", []string{"soon"}},
		"validation names a path": {"kernel: k\ndatabase: d\n", []string{"app.yaml", "pki_dir"}},
		"tracing file missing":    {"pki_dir: p\nkernel: k\ndatabase: d\ntracing: file\n", []string{"tracing_file is required"}},
		"tracing unknown":         {"pki_dir: p\nkernel: k\ndatabase: d\ntracing: jaeger\n", []string{`tracing "jaeger"`}},
		"log level unknown":       {"pki_dir: p\nkernel: k\ndatabase: d\nlog_level: loud\n", []string{`log_level "loud"`}},
		"negative gc headroom":    {"pki_dir: p\nkernel: k\ndatabase: d\ngc_headroom_mb: -1\n", []string{"gc_headroom_mb -1: want 1 to 65536 megabytes"}},
		"gc headroom too large":   {"pki_dir: p\nkernel: k\ndatabase: d\ngc_headroom_mb: 100000\n", []string{"gc_headroom_mb 100000"}},
		"duplicate key":           {"pki_dir: p\nkernel: k\ndatabase: d\nkernel: \"*\"\n", []string{"line 4: kernel: duplicate key (first at line 2)"}},
	} {
		t.Run(name, func(t *testing.T) {
			var c appConfig
			err := config.LoadChecked(writeFile(t, tc.body), nil, &c)
			if err == nil {
				t.Fatal("LoadChecked succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// gcSink keeps what TestPaceGC allocates on the heap.
var gcSink []byte

// TestPaceGC: the process's collector is paced by gc_headroom_mb, and
// left to Go when the environment sets GOGC.
func TestPaceGC(t *testing.T) {
	percent := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "") // restored after the test
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	stop := service.PaceGC(service.Common{GCHeadroomMB: 64}, zap.NewNop())
	// This test's heap is far smaller than 64 MB: allocating fast, it
	// may grow by more than Go would let it.
	// fast allocates 32 MB of garbage as fast as it can, then collects.
	fast := func() {
		for range 8192 {
			gcSink = make([]byte, 4096)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); percent() <= 100; {
		fast()
		if time.Now().After(deadline) {
			t.Fatalf("GC percentage %d after 5 s allocating fast, paced by 64 MB; want above 100", percent())
		}
	}
	stop()
	if p := percent(); p != 100 {
		t.Errorf("GC percentage %d after stop, want 100 again", p)
	}

	// With GOGC set, the same fast allocation leaves the percentage alone.
	t.Setenv("GOGC", "100")
	stop = service.PaceGC(service.Common{GCHeadroomMB: 64}, zap.NewNop())
	defer stop()
	for range 10 {
		fast()
		if p := percent(); p != 100 {
			t.Fatalf("GC percentage %d with GOGC set, want it left at 100", p)
		}
	}
}

func TestConfigWriteInline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.yaml")
	in := appConfig{Config: service.Config{Common: service.Common{PKIDir: "p"}, Kernel: "k"}, Database: "d"}
	if err := config.Write(path, in); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "pki_dir: p\n") || strings.Contains(string(data), "Config") {
		t.Errorf("written YAML does not inline the shared keys:\n%s", data)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    service.Flags
		wantErr string
	}{
		{name: "config only", args: []string{"--config", "c.yaml"}, want: service.Flags{Config: "c.yaml"}},
		{name: "overrides", args: []string{"--config", "c.yaml", "--listen", "127.0.0.1:1", "--addr-file", "a"},
			want: service.Flags{Config: "c.yaml", Listen: "127.0.0.1:1", AddrFile: "a"}},
		{name: "no config", args: nil, wantErr: "app: --config is required"},
		{name: "stray argument", args: []string{"--config", "x.yaml", "extra"}, wantErr: `app: unexpected arguments ["extra"]`},
		{name: "unknown flag", args: []string{"--verbose"}, wantErr: "flag provided but not defined"},
		{name: "version needs no config", args: []string{"--version"}, want: service.Flags{Version: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := service.ParseFlags("app", tt.args, &bytes.Buffer{}, true)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseFlags = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFlags (-want +got):\n%s", diff)
			}
		})
	}
	var out bytes.Buffer
	if _, err := service.ParseFlags("app", []string{"--help"}, &out, true); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help = %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"-config", "-listen", "-addr-file", "-version", "AMBIT_"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("usage %q does not list %s", out.String(), f)
		}
	}
	// Several listeners: no --listen.
	if _, err := service.ParseFlags("app", []string{"--config", "c.yaml", "--listen", "x"}, &bytes.Buffer{}, false); err == nil {
		t.Error("--listen accepted for a process with several listeners")
	}
}

func TestLoadOverrides(t *testing.T) {
	path := writeFile(t, "pki_dir: p\nkernel: k\ndatabase: d\nlisten: 127.0.0.1:7\naddr_file: file.addr\n")
	var c appConfig
	if err := service.Load(service.Flags{Config: path}, nil, &c); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7" || c.AddrFile != "file.addr" {
		t.Errorf("without flags: listen %q, addr_file %q", c.Listen, c.AddrFile)
	}
	c = appConfig{}
	if err := service.Load(service.Flags{Config: path, Listen: "127.0.0.1:8", AddrFile: "flag.addr"}, nil, &c); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8" || c.AddrFile != "flag.addr" {
		t.Errorf("with flags: listen %q, addr_file %q", c.Listen, c.AddrFile)
	}
	// The environment overrides the file, the flags the environment.
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"AMBIT_LISTEN": "127.0.0.1:9", "AMBIT_DATABASE": "env.db", "AMBIT_KERNEL_TIMEOUT": "7s"}[k]
		return v, ok
	}
	c = appConfig{}
	if err := service.Load(service.Flags{Config: path}, env, &c); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9" || c.Database != "env.db" || c.KernelTimeout != config.Duration(7*time.Second) {
		t.Errorf("with environment: %+v", c)
	}
	c = appConfig{}
	if err := service.Load(service.Flags{Config: path, Listen: "127.0.0.1:8"}, env, &c); err != nil || c.Listen != "127.0.0.1:8" {
		t.Errorf("flag over environment: listen %q, %v", c.Listen, err)
	}
}

// governanceOnly opens every method of the test service to governance
// identities only.
func governanceOnly() serve.Policy {
	p := serve.Policy{}
	desc := testpb.TestService_ServiceDesc
	for _, m := range desc.Methods {
		p["/"+desc.ServiceName+"/"+m.MethodName] = []pki.Role{pki.RoleGovernance}
	}
	for _, m := range desc.Streams {
		p["/"+desc.ServiceName+"/"+m.StreamName] = []pki.Role{pki.RoleGovernance}
	}
	return p
}

// mainApp runs an app sidecar through service.MainSidecar; run receives
// the started sidecar.
func mainApp(ctx context.Context, args []string, out io.Writer, env map[string]string, run func(context.Context, *service.Sidecar) error) (appConfig, error) {
	var c appConfig
	err := service.Main(ctx, service.Program{
		Name: "app", Role: pki.RoleEvidence, Config: &c,
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Run: func(ctx context.Context, p *service.Process) error {
			s, err := service.NewSidecar(ctx, p, c.Config, governanceOnly())
			if err != nil {
				return err
			}
			return run(ctx, s)
		},
	}, args, out)
	return c, err
}

func TestMainProgram(t *testing.T) {
	root := servicetest.PKI(t)
	evidenceDir := pki.IdentityDir(root, "evidence")
	var got *service.Sidecar
	run := func(_ context.Context, s *service.Sidecar) error { got = s; return nil }
	var out bytes.Buffer
	if _, err := mainApp(context.Background(), []string{"--help"}, &out, nil, run); err != nil {
		t.Errorf("Main --help = %v, want nil", err)
	}
	out.Reset()
	if _, err := mainApp(context.Background(), []string{"--version"}, &out, nil, run); err != nil || !strings.HasPrefix(out.String(), "app ") {
		t.Errorf("Main --version = %v, printed %q", err, out.String())
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, "read config"},
		{"bad log level", []string{"--config", writeFile(t, "pki_dir: p\nkernel: k\ndatabase: d\nlog_level: loud\n")}, "loud"},
		{"identity not in the folder", []string{"--config", writeFile(t, "pki_dir: "+evidenceDir+"\nkernel: k\ndatabase: d\nidentity: nobody\n")}, "nobody"},
		// The agent's folder handed to an evidence adapter: refused.
		{"certificate of another role", []string{"--config", writeFile(t, "pki_dir: "+pki.IdentityDir(root, "agent")+"\nkernel: k\ndatabase: d\nidentity: agent\n")},
			"has role agent, want evidence-adapter"},
	} {
		if _, err := mainApp(context.Background(), tt.args, &out, nil, run); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Main = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if got != nil {
		t.Fatal("run was called")
	}
	run = func(_ context.Context, s *service.Sidecar) error { got = s; return nil }
	c, err := mainApp(context.Background(), []string{"--config", writeFile(t, "pki_dir: "+evidenceDir+"\nkernel: k\ndatabase: d\nidentity: evidence\nlog_level: error\n"), "--listen", "127.0.0.1:9"},
		&out, map[string]string{"AMBIT_DATABASE": "from-env"}, run)
	if err != nil || got == nil {
		t.Fatalf("Main = %v, run called %v", err, got != nil)
	}
	if c.Database != "from-env" || c.Listen != "127.0.0.1:9" || got.Signer.KeyID() != "evidence" || got.Local.Identity.Role != pki.RoleEvidence {
		t.Errorf("run did not see the loaded configuration: %+v, signer %q", c, got.Signer.KeyID())
	}
}

// fakeKernel serves the health service as the kernel identity, with the
// adapter service's status set by the test.
type fakeKernel struct {
	addr   string
	health *health.Server
	stop   func()
}

func startFakeKernel(t *testing.T, root string) *fakeKernel {
	t.Helper()
	tlsCfg, err := pki.ServerTLS(pki.IdentityDir(root, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.NewServer(zap.NewNop(), tlsCfg, serve.Policy{})
	srv.Health.SetServingStatus("ambit.kernel.v1.AdapterService", healthpb.HealthCheckResponse_SERVING)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.GRPC.Serve(lis) }()
	var once sync.Once
	stop := func() { once.Do(func() { srv.GRPC.Stop(); <-done }) }
	t.Cleanup(stop)
	return &fakeKernel{addr: lis.Addr().String(), health: srv.Health, stop: stop}
}

// healthOf asks the sidecar at addr, as the agent, for service's status.
func healthOf(t *testing.T, root, addr, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	var st healthpb.HealthCheckResponse_ServingStatus
	err := servicetest.Call(t, root, "agent", pki.RoleEvidence, addr, func(ctx context.Context, conn *grpc.ClientConn) error {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		st = resp.GetStatus()
		return err
	})
	if err != nil {
		t.Fatalf("health check: %v", err)
	}
	return st
}

// waitHealth polls until service reports want.
func waitHealth(t *testing.T, root, addr, service string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	deadline := time.Now().Add(servicetest.Wait)
	for {
		got := healthOf(t, root, addr, service)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("health of %q = %v, want %v", service, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runApp(ctx context.Context, args []string, out io.Writer) error {
	_, err := mainApp(ctx, args, out, nil, func(ctx context.Context, s *service.Sidecar) error {
		testpb.RegisterTestServiceServer(s.Server, testpb.UnimplementedTestServiceServer{})
		return s.Serve(ctx)
	})
	return err
}

// TestSidecarHealthFollowsKernel pins the review finding: the adapters
// reported SERVING while the kernel was down. A sidecar's health is the
// kernel's, probed every health_interval.
func TestSidecarHealthFollowsKernel(t *testing.T) {
	root := servicetest.PKI(t)
	kernel := startFakeKernel(t, root)
	cfg := writeFile(t, fmt.Sprintf("pki_dir: %s\nidentity: evidence\nkernel: %s\ndatabase: d\nlog_level: error\nhealth_interval: 50ms\nkernel_timeout: 1s\n",
		pki.IdentityDir(root, "evidence"), kernel.addr))
	s := servicetest.Start(t, runApp, "--config", cfg)
	const svc = "grpc.testing.TestService"
	waitHealth(t, root, s.Addr, "", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, root, s.Addr, svc, healthpb.HealthCheckResponse_SERVING)

	// The kernel answers but cannot serve adapters (its database is
	// read-only, say): the sidecar cannot either.
	kernel.health.SetServingStatus("ambit.kernel.v1.AdapterService", healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, root, s.Addr, svc, healthpb.HealthCheckResponse_NOT_SERVING)
	kernel.health.SetServingStatus("ambit.kernel.v1.AdapterService", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, root, s.Addr, svc, healthpb.HealthCheckResponse_SERVING)

	kernel.stop()
	waitHealth(t, root, s.Addr, "", healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, root, s.Addr, svc, healthpb.HealthCheckResponse_NOT_SERVING)
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestSidecarStartsNotServingWithoutKernel: the first probe runs before
// the listener serves, so a sidecar whose kernel is down never reports
// SERVING.
func TestSidecarStartsNotServingWithoutKernel(t *testing.T) {
	root := servicetest.PKI(t)
	cfg := writeFile(t, fmt.Sprintf("pki_dir: %s\nidentity: evidence\nkernel: %s\ndatabase: d\nlog_level: error\nkernel_timeout: 1s\n",
		pki.IdentityDir(root, "evidence"), servicetest.DeadAddr(t)))
	s := servicetest.Start(t, runApp, "--config", cfg)
	if got := healthOf(t, root, s.Addr, ""); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health with the kernel down = %v, want NOT_SERVING", got)
	}
}

// TestPlaintextHealthAndMetrics: an orchestrator probes health without a
// client certificate, and scrapes call metrics over plain HTTP.
func TestPlaintextHealthAndMetrics(t *testing.T) {
	root := servicetest.PKI(t)
	kernel := startFakeKernel(t, root)
	cfg := writeFile(t, fmt.Sprintf("pki_dir: %s\nidentity: evidence\nkernel: %s\ndatabase: d\nlog_level: error\nhealth_listen: 127.0.0.1:0\nmetrics: 127.0.0.1:0\n",
		pki.IdentityDir(root, "evidence"), kernel.addr))
	s := servicetest.Start(t, runApp, "--config", cfg)
	addrs := s.Addrs
	if addrs[service.ListenerName] != s.Addr || addrs[service.HealthListener] == "" || addrs[service.MetricsListener] == "" {
		t.Fatalf("address file = %v", addrs)
	}

	conn, err := grpc.NewClient(addrs[service.HealthListener], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Wait)
	defer cancel()
	for _, svc := range []string{"", "grpc.testing.TestService"} {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("plaintext health of %q = %v, %v", svc, resp.GetStatus(), err)
		}
	}
	// Nothing but health is served in plaintext.
	if _, err := testpb.NewTestServiceClient(conn).EmptyCall(ctx, &testpb.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("plaintext EmptyCall = %v, want Unimplemented", err)
	}

	_ = servicetest.Call(t, root, "agent", pki.RoleEvidence, s.Addr, func(ctx context.Context, conn *grpc.ClientConn) error {
		_, err := testpb.NewTestServiceClient(conn).EmptyCall(ctx, &testpb.Empty{})
		return err
	})
	resp, err := http.Get("http://" + addrs[service.MetricsListener] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, want := range []string{
		// Denied to the agent: every call is counted with its code.
		`grpc_server_handled_total{grpc_code="PermissionDenied",grpc_method="EmptyCall",grpc_service="grpc.testing.TestService",grpc_type="unary"} 1`,
		`grpc_server_handling_seconds_bucket{grpc_method="EmptyCall",grpc_service="grpc.testing.TestService",grpc_type="unary",le="+Inf"} 1`,
		// The kernel probes, as client calls.
		`grpc_client_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"}`,
		"go_goroutines",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics do not contain %s", want)
		}
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

var (
	errInvalid     = errors.New("invalid request")
	errUnreachable = errors.New("kernel unreachable: nothing was done")
	errUnknown     = errors.New("unknown source")
)

var statuses = service.Statuses{
	{Err: errUnreachable, Code: codes.Unavailable, Reason: errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE},
	{Err: errInvalid, Code: codes.InvalidArgument, Reason: errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, WithCauses: true},
	{Err: errUnknown, Code: codes.NotFound, Reason: errorv1.ErrorReason_ERROR_REASON_UNKNOWN_SOURCE, WithCauses: true},
}

func TestStatusesValidate(t *testing.T) {
	if err := statuses.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
	bad := service.Statuses{
		{Code: codes.NotFound, Reason: errorv1.ErrorReason_ERROR_REASON_UNKNOWN_SOURCE},
		{Err: errUnknown, Reason: errorv1.ErrorReason_ERROR_REASON_UNKNOWN_SOURCE},
		{Err: errInvalid, Code: codes.InvalidArgument},
	}
	err := bad.Validate()
	for _, want := range []string{"statuses[0]: no error", "statuses[1] (unknown source): code OK", "statuses[2] (invalid request): no reason"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to name %q", err, want)
		}
	}
}

func TestStatuses(t *testing.T) {
	internal := errors.New("disk on fire")
	kernelRefusal := serve.Error(codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_FIELDS_OUTSIDE_GRANT, "field salary is not granted")
	tests := []struct {
		name   string
		err    error
		code   codes.Code // OK: returned as it is
		msg    string
		reason errorv1.ErrorReason
	}{
		{name: "nil", err: nil},
		{name: "kernel refusal passes unchanged", err: upstream.Classify(context.Background(), kernelRefusal, errUnreachable),
			code: codes.PermissionDenied, msg: "field salary is not granted", reason: errorv1.ErrorReason_ERROR_REASON_FIELDS_OUTSIDE_GRANT},
		{name: "sentinel text only", err: upstream.Classify(context.Background(), status.Error(codes.Unavailable, "dial tcp: refused"), errUnreachable),
			code: codes.Unavailable, msg: "kernel unreachable: nothing was done", reason: errorv1.ErrorReason_ERROR_REASON_KERNEL_UNAVAILABLE},
		{name: "with causes", err: errors.Join(errInvalid, errors.New("task_id is required")), code: codes.InvalidArgument,
			msg: "invalid request\ntask_id is required", reason: errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST},
		{name: "second rule", err: errUnknown, code: codes.NotFound, msg: "unknown source", reason: errorv1.ErrorReason_ERROR_REASON_UNKNOWN_SOURCE},
		{name: "unknown error stays internal", err: internal, code: codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statuses.Status(tt.err)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("Status(nil) = %v", got)
				}
				return
			}
			if tt.code == codes.OK {
				if got != tt.err {
					t.Errorf("Status = %v, want the error unchanged", got)
				}
				return
			}
			st, ok := status.FromError(got)
			if !ok || st.Code() != tt.code || st.Message() != tt.msg {
				t.Errorf("Status = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.msg)
			}
			if r := serve.Reason(got); r != tt.reason {
				t.Errorf("reason = %v, want %v", r, tt.reason)
			}
		})
	}
}

func TestErrorAndReason(t *testing.T) {
	err := serve.Error(codes.NotFound, errorv1.ErrorReason_ERROR_REASON_RECORD_NOT_FOUND, `no record "K-1"`)
	st := status.Convert(err)
	if st.Code() != codes.NotFound || st.Message() != `no record "K-1"` {
		t.Errorf("status = %v %q", st.Code(), st.Message())
	}
	want := []any{&errdetails.ErrorInfo{Reason: "ERROR_REASON_RECORD_NOT_FOUND", Domain: "ambit"}}
	if diff := cmp.Diff(want, st.Details(), protocmp.Transform()); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	foreign, _ := status.New(codes.NotFound, "x").WithDetails(&errdetails.ErrorInfo{Reason: "ERROR_REASON_RECORD_NOT_FOUND", Domain: "example.com"})
	for name, e := range map[string]error{
		"no status":      errors.New("plain"),
		"no details":     status.Error(codes.NotFound, "x"),
		"another domain": foreign.Err(),
	} {
		if r := serve.Reason(e); r != errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
			t.Errorf("%s: Reason = %v, want UNSPECIFIED", name, r)
		}
	}
}

func TestHandle(t *testing.T) {
	validate := func(req string) error {
		if req == "" {
			return errors.Join(errInvalid, errors.New("request is empty"))
		}
		return nil
	}
	var called int
	call := func(_ context.Context, caller, req string) (*string, error) {
		called++
		if req == "fail" {
			return nil, errUnknown
		}
		resp := caller + ":" + req
		return &resp, nil
	}
	ctx := context.Background()
	if resp, err := service.Handle(ctx, "", validate, call, statuses); resp != nil || status.Code(err) != codes.InvalidArgument || called != 0 {
		t.Errorf("invalid request: %v, %v, called %d", resp, err, called)
	}
	if resp, err := service.Handle(ctx, "fail", validate, call, statuses); resp != nil || status.Code(err) != codes.NotFound {
		t.Errorf("failing call: %v, %v", resp, err)
	}
	// Outside a server there is no authenticated caller: the name is empty.
	if resp, err := service.Handle(ctx, "ok", validate, call, statuses); err != nil || resp == nil || *resp != ":ok" {
		t.Errorf("call: %v, %v", resp, err)
	}
}

func TestNewID(t *testing.T) {
	a, b := service.NewID(), service.NewID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) || a == b {
		t.Errorf("NewID = %q, %q", a, b)
	}
}

// startSidecar starts a sidecar's process with a development PKI; the
// kernel address is never called.
func startSidecar(t *testing.T, ctx context.Context, cfg service.Config, policy serve.Policy) *service.Sidecar {
	t.Helper()
	root := servicetest.PKI(t)
	cfg.PKIDir = pki.IdentityDir(root, "evidence")
	cfg.ApplyDefaults("evidence")
	p, err := service.Start(ctx, "app", pki.RoleEvidence, cfg.Common, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	s, err := service.NewSidecar(ctx, p, cfg, policy)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProcessServeFailures(t *testing.T) {
	tests := []struct {
		name   string
		cfg    service.Config
		policy serve.Policy
		want   string
	}{
		{name: "address file cannot be written", cfg: service.Config{Common: service.Common{AddrFile: filepath.Join(t.TempDir(), "missing", "app.addr")}},
			want: "write addr file"},
		{name: "policy for a method not served", policy: serve.Policy{"/ambit.x.v1.XService/Do": {pki.RoleAgent}},
			want: "not served"},
		{name: "listen address invalid", cfg: service.Config{Listen: "256.0.0.1:1"}, want: "listen"},
		{name: "metrics address invalid", cfg: service.Config{Common: service.Common{Metrics: "256.0.0.1:1"}}, want: "listen metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Kernel = "127.0.0.1:1"
			s := startSidecar(t, context.Background(), tt.cfg, tt.policy)
			defer func() { _ = s.Close() }()
			done := make(chan error, 1)
			go func() { done <- s.Serve(context.Background()) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Serve = %v, want an error containing %q", err, tt.want)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("Serve did not stop")
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	root := servicetest.PKI(t)
	for name, c := range map[string]service.Common{
		"empty folder":         {Identity: "evidence", PKIDir: t.TempDir()},
		"another role":         {Identity: "agent", PKIDir: pki.IdentityDir(root, "agent")},
		"tracing file missing": {Identity: "evidence", PKIDir: pki.IdentityDir(root, "evidence"), Tracing: service.TracingFile, TracingFile: filepath.Join(t.TempDir(), "no", "t.json")},
	} {
		if p, err := service.Start(context.Background(), "app", pki.RoleEvidence, c, zap.NewNop()); err == nil {
			_ = p.Close()
			t.Errorf("%s: Start succeeded", name)
		}
	}
}

func TestIssuer(t *testing.T) {
	err := service.Issuer{}.Validate()
	for _, w := range []string{"identity is empty", "no signer", "no logger"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate(empty) = %v, want it to name %q", err, w)
		}
	}
	i := service.Issuer{Identity: "x"}.WithDefaults()
	if i.Now == nil || i.NewID == nil || len(i.NewID()) != 32 {
		t.Errorf("WithDefaults left the clock or identifiers unset")
	}
	fixed := func() string { return "0001" }
	if got := (service.Issuer{NewID: fixed}).WithDefaults().NewID(); got != "0001" {
		t.Errorf("WithDefaults replaced NewID: %q", got)
	}
}
