package service_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
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
database: d.db
`), &got)
	if err != nil {
		t.Fatal(err)
	}
	want := appConfig{Config: service.Config{
		Identity: "x", PKIDir: "pki", Listen: "127.0.0.1:7201", AddrFile: "x.addr", Kernel: "127.0.0.1:7001",
		KernelTimeout: config.Duration(time.Second), LogLevel: "warn", ShutdownGrace: config.Duration(2 * time.Second),
		Reflection: true,
	}, Database: "d.db"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadChecked (-want +got):\n%s", diff)
	}

	var minimal appConfig
	if err := config.LoadChecked(writeFile(t, "pki_dir: p\nkernel: k\ndatabase: d\n"), &minimal); err != nil {
		t.Fatal(err)
	}
	wantMin := appConfig{Config: service.Config{
		Identity: "app", PKIDir: "p", Listen: service.DefaultListen, Kernel: "k",
		KernelTimeout: config.Duration(service.DefaultKernelTimeout), ShutdownGrace: config.Duration(service.DefaultShutdownGrace),
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
		"unknown key":             {"pki_dir: p\nkernel: k\ndatabase: d\nverbose: true\n", []string{`"verbose"`}},
		"misspelt shared key":     {"pki_dir: p\nkernel: k\ndatabase: d\nkernal_timeout: 3s\n", []string{`"kernal_timeout"`}},
		"nested shared struct":    {"pki_dir: p\nkernel: k\ndatabase: d\nconfig: {identity: x}\n", []string{`"config"`}},
		"missing required":        {"log_level: info\n", []string{"pki_dir is required", "kernel is required", "database is required"}},
		"bad duration":            {"pki_dir: p\nkernel: k\ndatabase: d\nshutdown_grace: soon\n", []string{"soon"}},
		"validation names a path": {"kernel: k\ndatabase: d\n", []string{"app.yaml", "pki_dir"}},
	} {
		t.Run(name, func(t *testing.T) {
			var c appConfig
			err := config.LoadChecked(writeFile(t, tc.body), &c)
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

func TestConfigWriteInline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.yaml")
	in := appConfig{Config: service.Config{PKIDir: "p", Kernel: "k"}, Database: "d"}
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := service.ParseFlags("app", tt.args, &bytes.Buffer{})
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
	if _, err := service.ParseFlags("app", []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help = %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"-config", "-listen", "-addr-file"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("usage %q does not list %s", out.String(), f)
		}
	}
}

func TestLoadOverrides(t *testing.T) {
	path := writeFile(t, "pki_dir: p\nkernel: k\ndatabase: d\nlisten: 127.0.0.1:7\naddr_file: file.addr\n")
	var c appConfig
	if err := service.Load("app", []string{"--config", path}, &bytes.Buffer{}, &c); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7" || c.AddrFile != "file.addr" {
		t.Errorf("without flags: listen %q, addr_file %q", c.Listen, c.AddrFile)
	}
	c = appConfig{}
	if err := service.Load("app", []string{"--config", path, "--listen", "127.0.0.1:8", "--addr-file", "flag.addr"}, &bytes.Buffer{}, &c); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8" || c.AddrFile != "flag.addr" {
		t.Errorf("with flags: listen %q, addr_file %q", c.Listen, c.AddrFile)
	}
}

func TestMainProgram(t *testing.T) {
	pkiDir := filepath.Join(t.TempDir(), "pki")
	if err := pki.DevInit(pkiDir, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	var got *service.Process
	run := func(_ context.Context, p *service.Process) error { got = p; return nil }
	var out bytes.Buffer
	runMain := func(args ...string) (appConfig, error) {
		var c appConfig
		err := service.Main(context.Background(), "app", args, &out, &c, serve.Policy{}, run)
		return c, err
	}
	if _, err := runMain("--help"); err != nil {
		t.Errorf("Main --help = %v, want nil", err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, "read config"},
		{"bad log level", []string{"--config", writeFile(t, "pki_dir: p\nkernel: k\ndatabase: d\nlog_level: loud\n")}, "loud"},
		{"identity not in the PKI", []string{"--config", writeFile(t, "pki_dir: "+pkiDir+"\nkernel: k\ndatabase: d\nidentity: nobody\n")}, "nobody"},
	} {
		if _, err := runMain(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Main = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if got != nil {
		t.Fatal("run was called")
	}
	c, err := runMain("--config", writeFile(t, "pki_dir: "+pkiDir+"\nkernel: k\ndatabase: d\nidentity: evidence\nlog_level: error\n"), "--listen", "127.0.0.1:9")
	if err != nil || got == nil {
		t.Fatalf("Main = %v, run called %v", err, got != nil)
	}
	if c.Database != "d" || c.Listen != "127.0.0.1:9" || got.Signer.KeyID() != "evidence" {
		t.Errorf("run did not see the loaded configuration: %+v, signer %q", c, got.Signer.KeyID())
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
	kernelRefusal := service.Error(codes.PermissionDenied, errorv1.ErrorReason_ERROR_REASON_FIELDS_OUTSIDE_GRANT, "field salary is not granted")
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
			if r := service.Reason(got); r != tt.reason {
				t.Errorf("reason = %v, want %v", r, tt.reason)
			}
		})
	}
}

func TestErrorAndReason(t *testing.T) {
	err := service.Error(codes.NotFound, errorv1.ErrorReason_ERROR_REASON_RECORD_NOT_FOUND, `no record "K-1"`)
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
		if r := service.Reason(e); r != errorv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
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

// startProcess starts a process with a development PKI; the kernel address
// is never called.
func startProcess(t *testing.T, ctx context.Context, cfg service.Config, policy serve.Policy) (*service.Process, string) {
	t.Helper()
	pkiDir := filepath.Join(t.TempDir(), "pki")
	if err := pki.DevInit(pkiDir, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	cfg.PKIDir = pkiDir
	cfg.ApplyDefaults("evidence")
	p, err := service.Start(ctx, cfg, zap.NewNop(), policy)
	if err != nil {
		t.Fatal(err)
	}
	return p, pkiDir
}

// TestProcessServe runs a whole program (Main, Start, Serve) as a binary
// would: its address file names the listener, which serves health over
// mutual TLS until the context ends.
func TestProcessServe(t *testing.T) {
	pkiDir := filepath.Join(t.TempDir(), "pki")
	if err := pki.DevInit(pkiDir, pki.DefaultIdentities()); err != nil {
		t.Fatal(err)
	}
	cfgPath := writeFile(t, "pki_dir: "+pkiDir+"\nkernel: "+servicetest.DeadAddr(t)+"\ndatabase: d\nidentity: evidence\nlog_level: error\n")
	run := func(ctx context.Context, args []string, out io.Writer) error {
		var c appConfig
		return service.Main(ctx, "app", args, out, &c, serve.Policy{}, func(ctx context.Context, p *service.Process) error {
			return p.Serve(ctx)
		})
	}
	s := servicetest.Start(t, run, "--config", cfgPath)
	err := servicetest.Call(t, pkiDir, "agent", s.Addr, func(ctx context.Context, conn *grpc.ClientConn) error {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health = %v", resp.GetStatus())
		}
		return err
	})
	if err != nil {
		t.Errorf("health check: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Run = %v, want nil after cancellation", err)
	}
}

func TestProcessServeFailures(t *testing.T) {
	tests := []struct {
		name   string
		cfg    service.Config
		policy serve.Policy
		want   string
	}{
		{name: "address file cannot be written", cfg: service.Config{AddrFile: filepath.Join(t.TempDir(), "missing", "app.addr")},
			want: "write addr file"},
		{name: "policy for a method not served", policy: serve.Policy{"/ambit.x.v1.XService/Do": {pki.RoleAgent}},
			want: "not served"},
		{name: "listen address invalid", cfg: service.Config{Listen: "256.0.0.1:1"}, want: "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Kernel = "127.0.0.1:1"
			p, _ := startProcess(t, context.Background(), tt.cfg, tt.policy)
			defer func() { _ = p.Close() }()
			done := make(chan error, 1)
			go func() { done <- p.Serve(context.Background()) }()
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
	_, err := service.Start(context.Background(), service.Config{Identity: "evidence", PKIDir: t.TempDir(), Kernel: "k"}, zap.NewNop(), serve.Policy{})
	if err == nil {
		t.Error("Start with an empty PKI directory succeeded")
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
