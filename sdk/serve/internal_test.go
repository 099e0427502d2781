package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
)

func TestLoggerConfig(t *testing.T) {
	tests := []struct {
		level   string
		want    zapcore.Level
		wantErr bool
	}{
		{level: "debug", want: zapcore.DebugLevel},
		{level: "info", want: zapcore.InfoLevel},
		{level: "", want: zapcore.InfoLevel},
		{level: "warn", want: zapcore.WarnLevel},
		{level: "error", want: zapcore.ErrorLevel},
		{level: "fatal", wantErr: true},
		{level: "INFO", wantErr: true},
		{level: "verbose", wantErr: true},
	}
	for _, tt := range tests {
		t.Run("level "+tt.level, func(t *testing.T) {
			cfg, err := loggerConfig(tt.level)
			if (err != nil) != tt.wantErr {
				t.Fatalf("loggerConfig error = %v, want error %v", err, tt.wantErr)
			}
			if _, err := NewLogger(tt.level); (err != nil) != tt.wantErr {
				t.Fatalf("NewLogger error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got := cfg.Level.Level(); got != tt.want {
				t.Errorf("level = %v, want %v", got, tt.want)
			}
			if cfg.Sampling != nil {
				t.Error("sampling is on")
			}
			if cfg.Encoding != "json" {
				t.Errorf("encoding = %q, want json", cfg.Encoding)
			}

			// Encode one line and check the timestamp format.
			enc := zapcore.NewJSONEncoder(cfg.EncoderConfig)
			at := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
			buf, err := enc.EncodeEntry(zapcore.Entry{Level: zapcore.InfoLevel, Time: at, Message: "decision"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("line %q is not JSON: %v", buf.String(), err)
			}
			ts, _ := line[cfg.EncoderConfig.TimeKey].(string)
			if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err != nil {
				t.Errorf("timestamp %q is not ISO 8601: %v", ts, err)
			}
		})
	}
}

// TestLoggerFields pins one log vocabulary: a single "caller" key (the
// peer; zap's code location is "src"), "task" for a task id, durations
// with their unit.
func TestLoggerFields(t *testing.T) {
	cfg, err := loggerConfig("info")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	core := renaming{zapcore.NewCore(zapcore.NewJSONEncoder(cfg.EncoderConfig), zapcore.AddSync(&buf), zapcore.InfoLevel)}
	log := zap.New(core, zap.AddCaller()).With(zap.String("task_id", "t-1"))
	log.Info("decision", zap.String("caller", "agent"), zap.Duration("took", 1500*time.Microsecond))
	raw := buf.String()
	if n := strings.Count(raw, `"caller"`); n != 1 {
		t.Errorf("%d caller keys in %s", n, raw)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["caller"] != "agent" || line["task"] != "t-1" || line["took"] != "1.5ms" || line["task_id"] != nil {
		t.Errorf("line = %s", raw)
	}
	if src, _ := line["src"].(string); !strings.Contains(src, "internal_test.go") {
		t.Errorf("src = %v, want the code location", line["src"])
	}
}

func TestStorageUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"disk full", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{"read-only file system", fmt.Errorf("open: %w", syscall.EROFS), true},
		{"quota", syscall.EDQUOT, true},
		{"i/o error", syscall.EIO, true},
		{"permission", syscall.EACCES, false},
		{"plain", errors.New("x"), false},
		{"nil", nil, false},
	}
	for code, want := range map[int]bool{5: true, 6: true, 8: true, 8 | 3<<8: true, 10: true, 10 | 12<<8: true, 13: true, 14: true, 1: false, 19: false, 11: false} {
		tests = append(tests, struct {
			name string
			err  error
			want bool
		}{fmt.Sprintf("sqlite %d", code), fmt.Errorf("commit: %w", resultCode(code)), want})
	}
	for _, tt := range tests {
		if got := StorageUnavailable(tt.err); got != tt.want {
			t.Errorf("%s: StorageUnavailable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type resultCode int

func (c resultCode) Error() string { return "sqlite" }
func (c resultCode) Code() int     { return int(c) }

func TestPolicyAuthorize(t *testing.T) {
	p := Policy{
		"/ambit.agent.v1.AgentService/SubmitProposal": {pki.RoleAgent},
		"/ambit.kernel.v1.GovernanceService/Promote":  {pki.RoleGovernance, pki.RoleKernel},
		"/ambit.kernel.v1.KernelService/Closed":       {},
	}
	agent := pki.Identity{Name: "agent", Role: pki.RoleAgent}
	gov := pki.Identity{Name: "policy-owner", Role: pki.RoleGovernance}
	tests := []struct {
		name    string
		method  string
		id      pki.Identity
		code    codes.Code
		message string
	}{
		{name: "listed role", method: "/ambit.agent.v1.AgentService/SubmitProposal", id: agent, code: codes.OK},
		{name: "second listed role", method: "/ambit.kernel.v1.GovernanceService/Promote", id: gov, code: codes.OK},
		{name: "role not listed", method: "/ambit.kernel.v1.GovernanceService/Promote", id: agent, code: codes.PermissionDenied, message: "method requires role governance or kernel"},
		{name: "not in the policy", method: "/ambit.agent.v1.AgentService/Other", id: agent, code: codes.PermissionDenied, message: "method is not open to any role"},
		{name: "empty role list", method: "/ambit.kernel.v1.KernelService/Closed", id: gov, code: codes.PermissionDenied, message: "method is not open to any role"},
		{name: "health", method: "/grpc.health.v1.Health/Check", id: agent, code: codes.OK},
		{name: "health watch", method: "/grpc.health.v1.Health/Watch", id: gov, code: codes.OK},
		{name: "reflection v1", method: "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", id: agent, code: codes.OK},
		{name: "reflection v1alpha", method: "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", id: agent, code: codes.OK},
		{name: "path without leading slash", method: "ambit.agent.v1.AgentService/SubmitProposal", id: agent, code: codes.PermissionDenied, message: "method is not open to any role"},
		{name: "health without leading slash", method: "grpc.health.v1.Health/Check", id: agent, code: codes.PermissionDenied, message: "method is not open to any role"},
		{name: "health service without method", method: "/grpc.health.v1.Health/", id: agent, code: codes.PermissionDenied, message: "method is not open to any role"},
		{name: "service named like health", method: "/grpc.health.v1.HealthX/Check", id: agent, code: codes.PermissionDenied, message: "method is not open to any role"},
		{name: "empty method", method: "", id: agent, code: codes.PermissionDenied, message: "method is not open to any role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := status.Convert(p.authorize(tt.method, tt.id))
			if st.Code() != tt.code || st.Message() != tt.message {
				t.Errorf("authorize = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.message)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		policy  Policy
		wantErr []string // substrings, one per expected problem
	}{
		{name: "valid", policy: Policy{"/a.v1.S/M": {pki.RoleKernel}}},
		{name: "empty", policy: Policy{}},
		{
			name: "every problem reported",
			policy: Policy{
				"a.v1.S/M":   {pki.RoleKernel},
				"/a.v1.S/":   {pki.RoleKernel},
				"/a.v1.S/M":  {},
				"/a.v1.S/M2": {"root"},
			},
			wantErr: []string{`"a.v1.S/M": want`, `"/a.v1.S/": want`, `"/a.v1.S/M": no roles`, `unknown role "root"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate succeeded, want errors")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestCheckPolicy(t *testing.T) {
	desc := grpc.ServiceDesc{
		ServiceName: "ambit.test.v1.TestService",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Get", Handler: nil},
			{MethodName: "Put", Handler: nil},
		},
	}
	tests := []struct {
		name    string
		policy  Policy
		direct  bool
		wantErr []string
	}{
		{
			name:    "registered on GRPC directly",
			policy:  Policy{"/ambit.test.v1.TestService/Get": {pki.RoleAgent}, "/ambit.test.v1.TestService/Put": {pki.RoleKernel}},
			direct:  true,
			wantErr: []string{"service ambit.test.v1.TestService was registered on GRPC directly"},
		},
		{
			name:   "every served method listed",
			policy: Policy{"/ambit.test.v1.TestService/Get": {pki.RoleAgent}, "/ambit.test.v1.TestService/Put": {pki.RoleKernel}},
		},
		{
			name:    "served method without entry and entry for a typo",
			policy:  Policy{"/ambit.test.v1.TestService/Get": {pki.RoleAgent}, "/ambit.test.v1.TestService/Putt": {pki.RoleKernel}},
			wantErr: []string{"served method /ambit.test.v1.TestService/Put has no entry", "method /ambit.test.v1.TestService/Putt is not served"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer(zap.NewNop(), &tls.Config{}, tt.policy, WithReflection())
			defer s.GRPC.Stop()
			if tt.direct {
				s.GRPC.RegisterService(&desc, struct{}{})
			} else {
				s.RegisterService(&desc, struct{}{})
			}
			err := s.CheckPolicy()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("CheckPolicy: %v", err)
				}
				return
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("CheckPolicy error %v does not mention %q", err, want)
				}
			}
		})
	}
}

func TestAuthInterceptor(t *testing.T) {
	roleURI, err := url.Parse("ambit://role/agent")
	if err != nil {
		t.Fatal(err)
	}
	agentCert := &x509.Certificate{URIs: []*url.URL{roleURI}}
	agentCert.Subject.CommonName = "agent"
	noRoleCert := &x509.Certificate{}
	noRoleCert.Subject.CommonName = "agent"
	withCert := func(c *x509.Certificate) context.Context {
		info := credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{c}}}}
		return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: info})
	}
	ic := &interceptors{log: zap.NewNop(), policy: Policy{"/a.v1.S/M": {pki.RoleAgent}}}
	tests := []struct {
		name       string
		ctx        context.Context
		method     string
		code       codes.Code
		wantCaller *pki.Identity
	}{
		{name: "no peer", ctx: context.Background(), method: "/a.v1.S/M", code: codes.Unauthenticated},
		{name: "not TLS", ctx: peer.NewContext(context.Background(), &peer.Peer{}), method: "/a.v1.S/M", code: codes.Unauthenticated},
		{name: "certificate without role", ctx: withCert(noRoleCert), method: "/a.v1.S/M", code: codes.Unauthenticated},
		{name: "unauthenticated health", ctx: context.Background(), method: "/grpc.health.v1.Health/Check", code: codes.Unauthenticated},
		{name: "allowed", ctx: withCert(agentCert), method: "/a.v1.S/M", code: codes.OK, wantCaller: &pki.Identity{Name: "agent", Role: pki.RoleAgent}},
		{name: "denied", ctx: withCert(agentCert), method: "/a.v1.S/Other", code: codes.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *pki.Identity
			handler := func(ctx context.Context, _ any) (any, error) {
				id, ok := Caller(ctx)
				if ok {
					got = &id
				}
				return "ok", nil
			}
			_, err := ic.authUnary(tt.ctx, nil, &grpc.UnaryServerInfo{FullMethod: tt.method}, handler)
			if code := status.Code(err); code != tt.code {
				t.Fatalf("code = %v (%v), want %v", code, err, tt.code)
			}
			if diff := cmp.Diff(tt.wantCaller, got); diff != "" {
				t.Errorf("handler caller (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWireError(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	internal := status.Error(codes.Internal, "internal error")
	notFound := status.Error(codes.NotFound, "proposal not found")
	tests := []struct {
		name   string
		ctx    context.Context
		err    error
		want   error
		logged bool
	}{
		{name: "status passes", ctx: context.Background(), err: notFound, want: notFound},
		{name: "wrapped status unwrapped", ctx: context.Background(), err: errors.Join(errors.New("db at 10.0.0.5"), notFound), want: notFound},
		{name: "plain error", ctx: context.Background(), err: errors.New("db at 10.0.0.5"), want: internal, logged: true},
		{name: "caller cancelled", ctx: cancelled, err: context.Canceled, want: status.Error(codes.Canceled, "context canceled")},
		{name: "handler's own timeout while the call is live", ctx: context.Background(), err: context.DeadlineExceeded, want: internal, logged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.DebugLevel))
			ic := &interceptors{log: log}
			got := ic.wireError(tt.ctx, "/a.v1.S/M", tt.err)
			gs, ws := status.Convert(got), status.Convert(tt.want)
			if gs.Code() != ws.Code() || gs.Message() != ws.Message() {
				t.Errorf("wireError = %v, want %v", got, tt.want)
			}
			if logged := buf.Len() > 0; logged != tt.logged {
				t.Errorf("logged = %v (%s), want %v", logged, buf.String(), tt.logged)
			}
		})
	}
}

func TestWriteAddrFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "addrs.json")
	tests := []struct {
		name    string
		path    string
		addrs   map[string]string
		wantErr bool
	}{
		{name: "new file", path: path, addrs: map[string]string{"grpc": "127.0.0.1:4100", "admin": "127.0.0.1:4101"}},
		{name: "replaced", path: path, addrs: map[string]string{"grpc": "127.0.0.1:4200"}},
		{name: "empty", path: path, addrs: map[string]string{}},
		{name: "missing directory", path: filepath.Join(dir, "nope", "addrs.json"), addrs: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteAddrFile(tt.path, tt.addrs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("WriteAddrFile error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			data, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]string
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("%s is not JSON: %v", data, err)
			}
			if diff := cmp.Diff(tt.addrs, got); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if diff := cmp.Diff([]string{"addrs.json"}, names); diff != "" {
				t.Errorf("directory (-want +got), temporary files left behind?\n%s", diff)
			}
		})
	}
}

func TestDialErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		cfg  *tls.Config
	}{
		{name: "nil TLS config", ctx: context.Background()},
		{name: "cancelled context", ctx: cancelled, cfg: &tls.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := Dial(tt.ctx, "127.0.0.1:1", tt.cfg)
			if err == nil {
				_ = conn.Close()
				t.Fatal("Dial succeeded, want an error")
			}
		})
	}
}

func TestNewServerPanics(t *testing.T) {
	tests := []struct {
		name string
		log  *zap.Logger
		cfg  *tls.Config
	}{
		{name: "nil logger", cfg: &tls.Config{}},
		{name: "nil TLS config", log: zap.NewNop()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("NewServer did not panic")
				}
			}()
			NewServer(tt.log, tt.cfg, Policy{})
		})
	}
}

// TestValidatorRefusesOverLimits: a request outside the limits its .proto
// declares is InvalidArgument naming every violated field, with the
// INVALID_REQUEST reason; a request within them passes.
func TestValidatorRefusesOverLimits(t *testing.T) {
	val, err := newValidator()
	if err != nil {
		t.Fatal(err)
	}
	facts := make([]string, 17)
	for i := range facts {
		facts[i] = "capabilities"
	}
	err = val.check(&agentv1.GetSelfViewRequest{TaskId: "", Facts: facts})
	st, _ := status.FromError(err)
	if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "task_id") || !strings.Contains(st.Message(), "facts") {
		t.Fatalf("check = %v, want InvalidArgument naming task_id and facts", err)
	}
	var reason string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			reason = info.GetReason()
		}
	}
	if reason != "ERROR_REASON_INVALID_REQUEST" {
		t.Errorf("reason = %q", reason)
	}
	if err := val.check(&agentv1.GetSelfViewRequest{TaskId: "t", Facts: []string{"expiry"}}); err != nil {
		t.Errorf("a request within the limits: %v", err)
	}
	if err := val.check("not a message"); err != nil {
		t.Errorf("a non-message: %v", err)
	}
}
