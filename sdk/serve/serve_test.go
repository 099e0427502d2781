package serve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/serve"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testTimeout bounds every wait so that a broken test fails instead of
// hanging; nothing asserts on how fast anything is.
const testTimeout = 20 * time.Second

const (
	methodEmpty         = "/grpc.testing.TestService/EmptyCall"
	methodUnary         = "/grpc.testing.TestService/UnaryCall"
	methodStreamingOut  = "/grpc.testing.TestService/StreamingOutputCall"
	methodUnimplemented = "/grpc.testing.TestService/UnimplementedCall"
)

// testPolicy opens two unary methods and one streaming method; every other
// method of the test service is left out and so denied.
func testPolicy() serve.Policy {
	return serve.Policy{
		methodEmpty:        {pki.RoleKernel, pki.RoleGovernance},
		methodUnary:        {pki.RoleKernel},
		methodStreamingOut: {pki.RoleKernel},
	}
}

// testService is the grpc.testing.TestService with behaviour set by a test.
// EmptyCall records the caller; UnaryCall and StreamingOutputCall run the
// test's function (nil: succeed).
type testService struct {
	testpb.UnimplementedTestServiceServer

	unary  func(ctx context.Context) error
	stream func(ctx context.Context) error

	mu      sync.Mutex
	callers []pki.Identity
}

var _ testpb.TestServiceServer = (*testService)(nil)

func (s *testService) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	id, ok := serve.Caller(ctx)
	if !ok {
		return nil, status.Error(codes.FailedPrecondition, "no caller in context")
	}
	s.mu.Lock()
	s.callers = append(s.callers, id)
	s.mu.Unlock()
	return &testpb.Empty{}, nil
}

func (s *testService) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if s.unary != nil {
		if err := s.unary(ctx); err != nil {
			return nil, err
		}
	}
	return &testpb.SimpleResponse{}, nil
}

func (s *testService) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, ss grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	if _, ok := serve.Caller(ss.Context()); !ok {
		return status.Error(codes.FailedPrecondition, "no caller in context")
	}
	if s.stream != nil {
		if err := s.stream(ss.Context()); err != nil {
			return err
		}
	}
	return ss.Send(&testpb.StreamingOutputCallResponse{})
}

func (s *testService) lastCaller() (pki.Identity, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.callers) == 0 {
		return pki.Identity{}, false
	}
	return s.callers[len(s.callers)-1], true
}

// devPKI writes the default identities into a fresh directory.
func devPKI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := pki.DevInit(dir, pki.DefaultIdentities()); err != nil {
		t.Fatalf("DevInit: %v", err)
	}
	return dir
}

// fixture is a kernel server with the test service, served by serve.Run on
// a free loopback port and stopped in t.Cleanup.
type fixture struct {
	dir  string
	addr string
	srv  *serve.Server
	logs *observer.ObservedLogs
}

func newFixture(t *testing.T, svc *testService, opts ...serve.Option) *fixture {
	t.Helper()
	return newFixtureAt(t, zap.DebugLevel, svc, opts...)
}

// newFixtureAt is newFixture with a logger that writes lines of level and
// above.
func newFixtureAt(t *testing.T, level zapcore.Level, svc *testService, opts ...serve.Option) *fixture {
	t.Helper()
	dir := devPKI(t)
	core, logs := observer.New(level)
	log := zap.New(core)
	tlsCfg, err := pki.ServerTLS(pki.IdentityDir(dir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.NewServer(log, tlsCfg, testPolicy(), opts...)
	testpb.RegisterTestServiceServer(srv, svc)
	addrs := startRun(t, log, time.Minute, serve.Listener{Name: "grpc", Addr: "127.0.0.1:0", Server: srv})
	return &fixture{dir: dir, addr: addrs["grpc"], srv: srv, logs: logs}
}

// startRun runs serve.Run in a goroutine, waits for its ready call and
// returns the bound addresses. Cleanup cancels Run and waits for it.
func startRun(t *testing.T, log *zap.Logger, grace time.Duration, ls ...serve.Listener) map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan map[string]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, log, grace, func(addrs map[string]string) { ready <- addrs }, ls...)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(testTimeout):
			t.Error("Run did not return after cancel")
		}
	})
	select {
	case addrs := <-ready:
		return addrs
	case err := <-done:
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(testTimeout):
		t.Fatal("Run did not call ready")
	}
	return nil
}

func dial(t *testing.T, dir, addr, name string) *grpc.ClientConn {
	t.Helper()
	tlsCfg, err := pki.ClientTLS(pki.IdentityDir(dir, name), name, pki.Expect{Role: pki.RoleKernel})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := serve.Dial(context.Background(), addr, tlsCfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// wantStatus fails the test unless err has code and message.
func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || st.Message() != msg {
		t.Errorf("status = %v %q, want %v %q", st.Code(), st.Message(), code, msg)
	}
}

func streamOnce(ctx context.Context, c testpb.TestServiceClient) error {
	stream, err := c.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func TestAuthorization(t *testing.T) {
	svc := &testService{}
	f := newFixture(t, svc)

	emptyCall := func(ctx context.Context, conn *grpc.ClientConn) error {
		_, err := testpb.NewTestServiceClient(conn).EmptyCall(ctx, &testpb.Empty{})
		return err
	}
	tests := []struct {
		name    string
		caller  string
		call    func(ctx context.Context, conn *grpc.ClientConn) error
		code    codes.Code
		message string
		// wantCaller is the identity the handler must see; nil: the call
		// must not reach a handler that records callers.
		wantCaller *pki.Identity
	}{
		{
			name:       "listed role",
			caller:     "kernel",
			call:       emptyCall,
			code:       codes.OK,
			wantCaller: &pki.Identity{Name: "kernel", Role: pki.RoleKernel},
		},
		{
			name:       "second listed role",
			caller:     "policy-owner",
			call:       emptyCall,
			code:       codes.OK,
			wantCaller: &pki.Identity{Name: "policy-owner", Role: pki.RoleGovernance},
		},
		{
			name:    "role not listed",
			caller:  "agent",
			call:    emptyCall,
			code:    codes.PermissionDenied,
			message: "method requires role kernel or governance",
		},
		{
			// PermissionDenied, not the handler's Unimplemented: the
			// decision is made before any handler runs.
			name:   "method not in the policy",
			caller: "kernel",
			call: func(ctx context.Context, conn *grpc.ClientConn) error {
				_, err := testpb.NewTestServiceClient(conn).UnimplementedCall(ctx, &testpb.Empty{})
				return err
			},
			code:    codes.PermissionDenied,
			message: "method is not open to any role",
		},
		{
			name:   "health is open to any authenticated peer",
			caller: "agent",
			call: func(ctx context.Context, conn *grpc.ClientConn) error {
				resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
				if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					return fmt.Errorf("health status %v", resp.GetStatus())
				}
				return err
			},
			code: codes.OK,
		},
		{
			name:   "stream, listed role",
			caller: "kernel",
			call: func(ctx context.Context, conn *grpc.ClientConn) error {
				return streamOnce(ctx, testpb.NewTestServiceClient(conn))
			},
			code: codes.OK,
		},
		{
			name:   "stream, role not listed",
			caller: "verifier",
			call: func(ctx context.Context, conn *grpc.ClientConn) error {
				return streamOnce(ctx, testpb.NewTestServiceClient(conn))
			},
			code:    codes.PermissionDenied,
			message: "method requires role kernel",
		},
		{
			name:   "stream, method not in the policy",
			caller: "kernel",
			call: func(ctx context.Context, conn *grpc.ClientConn) error {
				stream, err := testpb.NewTestServiceClient(conn).FullDuplexCall(ctx)
				if err != nil {
					return err
				}
				_, err = stream.Recv()
				return err
			},
			code:    codes.PermissionDenied,
			message: "method is not open to any role",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc.mu.Lock()
			svc.callers = nil
			svc.mu.Unlock()

			err := tt.call(callCtx(t), dial(t, f.dir, f.addr, tt.caller))
			if tt.code == codes.OK {
				if err != nil {
					t.Fatalf("call: %v", err)
				}
			} else {
				wantStatus(t, err, tt.code, tt.message)
			}
			got, reached := svc.lastCaller()
			switch {
			case tt.wantCaller == nil && reached:
				t.Errorf("handler saw caller %+v, want the call stopped before it", got)
			case tt.wantCaller != nil && !reached:
				t.Error("handler not reached")
			case tt.wantCaller != nil:
				if diff := cmp.Diff(*tt.wantCaller, got); diff != "" {
					t.Errorf("Caller (-want +got):\n%s", diff)
				}
			}
		})
	}
	if n := f.logs.FilterMessage("permission denied").Len(); n != 4 {
		t.Errorf("%d permission denied lines, want one per denied call (4)", n)
	}
}

func TestErrorHygiene(t *testing.T) {
	const secret = "password=hunter2 host=10.0.0.5"
	unaryCall := func(ctx context.Context, c testpb.TestServiceClient) error {
		_, err := c.UnaryCall(ctx, &testpb.SimpleRequest{})
		return err
	}
	streamCall := func(ctx context.Context, c testpb.TestServiceClient) error {
		return streamOnce(ctx, c)
	}
	tests := []struct {
		name    string
		stream  bool // the behaviour runs in StreamingOutputCall, not UnaryCall
		handler func(ctx context.Context) error
		code    codes.Code
		message string
		logMsg  string // the one line logged for the call; "" for none
	}{
		{
			name: "plain error",
			handler: func(context.Context) error {
				return fmt.Errorf("query proposals: %s: %w", secret, errors.New("connection reset"))
			},
			code:    codes.Internal,
			message: "internal error",
			logMsg:  "internal error",
		},
		{
			name:    "status error passes unchanged",
			handler: func(context.Context) error { return status.Error(codes.NotFound, "proposal not found") },
			code:    codes.NotFound,
			message: "proposal not found",
		},
		{
			name: "wrapped status loses the wrapping text",
			handler: func(context.Context) error {
				return fmt.Errorf("load proposal from %s: %w", secret, status.Error(codes.NotFound, "proposal not found"))
			},
			code:    codes.NotFound,
			message: "proposal not found",
		},
		{
			name: "disk full",
			handler: func(context.Context) error {
				return fmt.Errorf("commit to %s: %w", secret, &fs.PathError{Op: "write", Path: "kernel.db-wal", Err: syscall.ENOSPC})
			},
			code:    codes.Unavailable,
			message: "storage unavailable; nothing was changed, retry later",
			logMsg:  "storage unavailable",
		},
		{
			name: "read-only database",
			handler: func(context.Context) error {
				// SQLITE_READONLY_DBMOVED (8 | 4<<8), as the driver reports it.
				return fmt.Errorf("insert into %s: %w", secret, sqliteError(8|4<<8))
			},
			code:    codes.Unavailable,
			message: "storage unavailable; nothing was changed, retry later",
			logMsg:  "storage unavailable",
		},
		{
			name:    "another database error stays internal",
			handler: func(context.Context) error { return fmt.Errorf("%s: %w", secret, sqliteError(19)) }, // SQLITE_CONSTRAINT
			code:    codes.Internal,
			message: "internal error",
			logMsg:  "internal error",
		},
		{
			name:    "panic",
			handler: func(context.Context) error { panic("nil map in " + secret) },
			code:    codes.Internal,
			message: "internal error",
			logMsg:  "handler panicked",
		},
		{
			name:    "stream, plain error",
			stream:  true,
			handler: func(context.Context) error { return errors.New(secret) },
			code:    codes.Internal,
			message: "internal error",
			logMsg:  "internal error",
		},
		{
			name:    "stream, panic",
			stream:  true,
			handler: func(context.Context) error { panic(secret) },
			code:    codes.Internal,
			message: "internal error",
			logMsg:  "handler panicked",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &testService{}
			call := unaryCall
			if tt.stream {
				svc.stream, call = tt.handler, streamCall
			} else {
				svc.unary = tt.handler
			}
			f := newFixture(t, svc)
			client := testpb.NewTestServiceClient(dial(t, f.dir, f.addr, "kernel"))

			err := call(callCtx(t), client)
			wantStatus(t, err, tt.code, tt.message)
			if strings.Contains(fmt.Sprint(err), "hunter2") {
				t.Errorf("internal cause crossed the wire: %v", err)
			}

			var lines []string
			for _, e := range f.logs.FilterLevelExact(zap.ErrorLevel).All() {
				lines = append(lines, e.Message)
			}
			var want []string
			if tt.logMsg != "" {
				want = []string{tt.logMsg}
			}
			if diff := cmp.Diff(want, lines); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
			if tt.logMsg != "" {
				fields := f.logs.FilterMessage(tt.logMsg).All()[0].ContextMap()
				if !strings.Contains(fmt.Sprint(fields), "hunter2") {
					t.Errorf("logged fields %v do not carry the cause", fields)
				}
				if fields["caller"] != "kernel" {
					t.Errorf("logged caller = %v, want kernel", fields["caller"])
				}
				if tt.logMsg == "handler panicked" && !strings.Contains(fmt.Sprint(fields["stack"]), "serve_test") {
					t.Errorf("panic line has no stack of the handler: %v", fields["stack"])
				}
			}

			// The server keeps serving, on the same connection.
			if _, err := client.EmptyCall(callCtx(t), &testpb.Empty{}); err != nil {
				t.Errorf("EmptyCall after the failed call: %v", err)
			}
		})
	}
}

// sqliteError is an error with a SQLite result code, as modernc.org/sqlite
// returns them.
type sqliteError int

func (e sqliteError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e sqliteError) Code() int     { return int(e) }

// rawCodec sends bytes as they are, to put a request on the wire that does
// not decode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestUndecodableRequest pins the review finding: a request that does not
// decode was answered Internal. It is the client's error.
func TestUndecodableRequest(t *testing.T) {
	f := newFixture(t, &testService{})
	conn := dial(t, f.dir, f.addr, "kernel")
	var out []byte
	// Field 1 as a length-delimited field running past the end.
	err := conn.Invoke(callCtx(t), methodUnary, []byte{0x0a, 0xff, 0x01}, &out, grpc.ForceCodec(rawCodec{}))
	wantStatus(t, err, codes.InvalidArgument, "request does not decode as grpc.testing.SimpleRequest")
	if lines := f.logs.FilterLevelExact(zap.ErrorLevel).All(); len(lines) != 0 {
		t.Errorf("a client's bad bytes were logged as an error: %v", lines[0].Message)
	}
	// A well-formed request on the same connection still works.
	if _, err := testpb.NewTestServiceClient(conn).UnaryCall(callCtx(t), &testpb.SimpleRequest{}); err != nil {
		t.Errorf("UnaryCall: %v", err)
	}
}

// TestCallLog checks the one line logged per call: Ambit's field names,
// the caller from its certificate and the call's duration with its unit;
// a success is logged only by a logger that writes debug lines.
func TestCallLog(t *testing.T) {
	const took = 20 * time.Millisecond
	var calls atomic.Int32
	refuseFirst := &testService{unary: func(context.Context) error {
		time.Sleep(took)
		if calls.Add(1) == 1 {
			return status.Error(codes.NotFound, "no such claim")
		}
		return nil
	}}
	f := newFixtureAt(t, zap.InfoLevel, refuseFirst)
	client := testpb.NewTestServiceClient(dial(t, f.dir, f.addr, "kernel"))
	if _, err := client.UnaryCall(callCtx(t), &testpb.SimpleRequest{}); status.Code(err) != codes.NotFound {
		t.Fatalf("UnaryCall = %v", err)
	}
	if _, err := client.UnaryCall(callCtx(t), &testpb.SimpleRequest{}); err != nil {
		t.Fatalf("UnaryCall = %v", err)
	}
	lines := f.logs.FilterMessage("call").All()
	if len(lines) != 1 {
		t.Fatalf("%d call lines, want the refusal's alone", len(lines))
	}
	got := lines[0].ContextMap()
	if lines[0].Level != zap.InfoLevel {
		t.Errorf("a refusal is logged at %v, want info", lines[0].Level)
	}
	for key, want := range map[string]any{"method": methodUnary, "grpc_code": "NotFound", "caller": "kernel", "role": "kernel", "error": "rpc error: code = NotFound desc = no such claim"} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if d, ok := got["took"].(time.Duration); !ok || d < took {
		t.Errorf("took = %#v, want a duration of at least the call's %s", got["took"], took)
	}
	debug := newFixture(t, &testService{unary: func(context.Context) error { time.Sleep(took); return nil }})
	if _, err := testpb.NewTestServiceClient(dial(t, debug.dir, debug.addr, "kernel")).UnaryCall(callCtx(t), &testpb.SimpleRequest{}); err != nil {
		t.Fatalf("UnaryCall = %v", err)
	}
	if lines := debug.logs.FilterMessage("call").All(); len(lines) != 1 || lines[0].Level != zap.DebugLevel || lines[0].ContextMap()["grpc_code"] != "OK" {
		t.Errorf("a success logged by a debug logger: %+v, want one debug line", lines)
	} else if d, ok := lines[0].ContextMap()["took"].(time.Duration); !ok || d < took {
		t.Errorf("took = %#v, want at least %s", lines[0].ContextMap()["took"], took)
	}
	for _, key := range []string{"grpc.service", "grpc.method", "grpc.code", "grpc.component", "grpc.start_time"} {
		if _, ok := got[key]; ok {
			t.Errorf("field %s is logged under go-grpc-middleware's name", key)
		}
	}
}

func TestMaxRecvMsgSize(t *testing.T) {
	f := newFixture(t, &testService{}, serve.WithMaxRecvMsgSize(1024))
	client := testpb.NewTestServiceClient(dial(t, f.dir, f.addr, "kernel"))
	tests := []struct {
		name    string
		payload int
		code    codes.Code
	}{
		{name: "within the limit", payload: 512, code: codes.OK},
		{name: "over the limit", payload: 4096, code: codes.ResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, tt.payload)}}
			_, err := client.UnaryCall(callCtx(t), req)
			if got := status.Code(err); got != tt.code {
				t.Errorf("code = %v (%v), want %v", got, err, tt.code)
			}
		})
	}
}

func TestReflection(t *testing.T) {
	tests := []struct {
		name string
		opts []serve.Option
		want []string // nil: reflection is not served
	}{
		{
			name: "with reflection",
			opts: []serve.Option{serve.WithReflection()},
			want: []string{"grpc.testing.TestService"},
		},
		{name: "without reflection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &testService{}, tt.opts...)
			conn := dial(t, f.dir, f.addr, "agent")
			stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(callCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			err = stream.Send(&reflectionpb.ServerReflectionRequest{
				MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
			})
			// io.EOF: the server has already ended the stream; Recv has
			// its status.
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			resp, err := stream.Recv()
			if tt.want == nil {
				if status.Code(err) != codes.Unimplemented {
					t.Fatalf("Recv error = %v, want Unimplemented", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Recv: %v", err)
			}
			_ = stream.CloseSend()
			var got []string
			for _, s := range resp.GetListServicesResponse().GetService() {
				got = append(got, s.GetName())
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("services (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunGracefulShutdown(t *testing.T) {
	tests := []struct {
		name  string
		grace time.Duration
		// release lets the in-flight call finish once draining has begun;
		// otherwise it blocks until the server cancels it.
		release bool
		code    codes.Code
	}{
		{name: "in-flight call finishes", grace: time.Minute, release: true, code: codes.OK},
		{name: "grace over, call closed", grace: 50 * time.Millisecond, release: false, code: codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			svc := &testService{unary: func(ctx context.Context) error {
				close(started)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}}
			dir := devPKI(t)
			core, logs := observer.New(zap.DebugLevel)
			log := zap.New(core)
			tlsCfg, err := pki.ServerTLS(pki.IdentityDir(dir, "kernel"), "kernel")
			if err != nil {
				t.Fatal(err)
			}
			srv := serve.NewServer(log, tlsCfg, testPolicy())
			testpb.RegisterTestServiceServer(srv, svc)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ready := make(chan map[string]string, 1)
			runDone := make(chan error, 1)
			go func() {
				runDone <- serve.Run(ctx, log, tt.grace, func(a map[string]string) { ready <- a },
					serve.Listener{Name: "grpc", Addr: "127.0.0.1:0", Server: srv})
			}()
			var addr string
			select {
			case a := <-ready:
				addr = a["grpc"]
			case <-time.After(testTimeout):
				t.Fatal("Run did not call ready")
			}

			client := testpb.NewTestServiceClient(dial(t, dir, addr, "kernel"))
			callDone := make(chan error, 1)
			rpcCtx := callCtx(t)
			go func() {
				_, err := client.UnaryCall(rpcCtx, &testpb.SimpleRequest{})
				callDone <- err
			}()
			select {
			case <-started:
			case <-time.After(testTimeout):
				t.Fatal("handler not started")
			}

			cancel()
			waitFor(t, func() bool { return logs.FilterMessage("draining").Len() > 0 })
			if tt.release {
				close(release)
			}

			select {
			case err := <-callDone:
				if got := status.Code(err); got != tt.code {
					t.Errorf("in-flight call code = %v (%v), want %v", got, err, tt.code)
				}
			case <-time.After(testTimeout):
				t.Fatal("in-flight call did not end")
			}
			select {
			case err := <-runDone:
				if err != nil {
					t.Errorf("Run = %v, want nil", err)
				}
			case <-time.After(testTimeout):
				t.Fatal("Run did not return")
			}

			resp, err := srv.Health.Check(context.Background(), &healthpb.HealthCheckRequest{})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
				t.Errorf("health after Run = %v, %v; want NOT_SERVING", resp.GetStatus(), err)
			}
		})
	}
}

// waitFor polls cond until it holds, failing the test after testTimeout.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunReady(t *testing.T) {
	dir := devPKI(t)
	log := zap.NewNop()
	newSrv := func(name string) *serve.Server {
		tlsCfg, err := pki.ServerTLS(pki.IdentityDir(dir, name), name)
		if err != nil {
			t.Fatal(err)
		}
		return serve.NewServer(log, tlsCfg, serve.Policy{})
	}
	// One server on two listeners, a second server on a third.
	public, admin := newSrv("kernel"), newSrv("kernel")
	ls := []serve.Listener{
		{Name: "grpc", Addr: "127.0.0.1:0", Server: public},
		{Name: "admin", Addr: "127.0.0.1:0", Server: admin},
	}
	second := serve.Listener{Name: "grpc-2", Addr: "127.0.0.1:0", Server: public}
	if probe, err := net.Listen("tcp", "[::1]:0"); err == nil {
		_ = probe.Close()
		second.Addr = "[::1]:0"
	}
	ls = append(ls, second)
	addrs := startRun(t, log, time.Minute, ls...)

	var names []string
	for name := range addrs {
		names = append(names, name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"admin", "grpc", "grpc-2"}, names); diff != "" {
		t.Fatalf("ready names (-want +got):\n%s", diff)
	}
	for name, addr := range addrs {
		t.Run(name, func(t *testing.T) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil || port == "0" {
				t.Fatalf("address %q: want a bound host:port (%v)", addr, err)
			}
			resp, err := healthpb.NewHealthClient(dial(t, dir, addr, "agent")).Check(callCtx(t), &healthpb.HealthCheckRequest{})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health = %v, %v; want SERVING", resp.GetStatus(), err)
			}
		})
	}

	path := filepath.Join(t.TempDir(), "addrs.json")
	if err := serve.WriteAddrFile(path, addrs); err != nil {
		t.Fatalf("WriteAddrFile: %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	dir := devPKI(t)
	tlsCfg, err := pki.ServerTLS(pki.IdentityDir(dir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	srv := func() *serve.Server { return serve.NewServer(zap.NewNop(), tlsCfg, serve.Policy{}) }
	tests := []struct {
		name    string
		ls      []serve.Listener
		wantErr string
	}{
		{name: "no listeners", wantErr: "no listeners"},
		{name: "no server", ls: []serve.Listener{{Name: "grpc", Addr: "127.0.0.1:0"}}, wantErr: "has no server"},
		{name: "no name", ls: []serve.Listener{{Addr: "127.0.0.1:0", Server: srv()}}, wantErr: "empty or repeated"},
		{
			name:    "repeated name",
			ls:      []serve.Listener{{Name: "a", Addr: "127.0.0.1:0", Server: srv()}, {Name: "a", Addr: "127.0.0.1:0", Server: srv()}},
			wantErr: "empty or repeated",
		},
		{
			name:    "address in use",
			ls:      []serve.Listener{{Name: "a", Addr: "127.0.0.1:0", Server: srv()}, {Name: "b", Addr: taken.Addr().String(), Server: srv()}},
			wantErr: "listen b on",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			err := serve.Run(context.Background(), zap.NewNop(), time.Second, func(map[string]string) { called = true }, tt.ls...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.wantErr)
			}
			if called {
				t.Error("ready called although Run failed")
			}
		})
	}
}

func TestRunCancelledBeforeServing(t *testing.T) {
	dir := devPKI(t)
	tlsCfg, err := pki.ServerTLS(pki.IdentityDir(dir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = serve.Run(ctx, zap.NewNop(), time.Second, nil,
		serve.Listener{Name: "grpc", Addr: "127.0.0.1:0", Server: serve.NewServer(zap.NewNop(), tlsCfg, serve.Policy{})})
	if err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// TestDialReplicas dials two servers of one identity as one address list:
// calls reach both, and once one stops they all reach the other.
func TestDialReplicas(t *testing.T) {
	dir := devPKI(t)
	log := zap.NewNop()
	tlsCfg, err := pki.ServerTLS(pki.IdentityDir(dir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	svcs := []*testService{{}, {}}
	var addrs []string
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	for i, svc := range svcs {
		srv := serve.NewServer(log, tlsCfg, testPolicy())
		testpb.RegisterTestServiceServer(srv, svc)
		l := serve.Listener{Name: "grpc", Addr: "127.0.0.1:0", Server: srv}
		if i == 1 {
			addrs = append(addrs, startRun(t, log, time.Second, l)["grpc"])
			continue
		}
		ready := make(chan map[string]string, 1)
		go func() { doneA <- serve.Run(ctxA, log, time.Second, func(a map[string]string) { ready <- a }, l) }()
		addrs = append(addrs, (<-ready)["grpc"])
	}
	t.Cleanup(func() { stopA(); <-doneA })

	c := testpb.NewTestServiceClient(dial(t, dir, strings.Join(addrs, ","), "governance"))
	ctx := callCtx(t)
	calls := func(n int) {
		t.Helper()
		for range n {
			if _, err := c.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
				t.Fatalf("EmptyCall: %v", err)
			}
		}
	}
	count := func(s *testService) int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.callers) }
	// Round robin starts once both connections are up.
	for deadline := time.Now().Add(testTimeout); count(svcs[0]) == 0 || count(svcs[1]) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("calls reached %d and %d: want both replicas", count(svcs[0]), count(svcs[1]))
		}
		calls(1)
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("Run: %v", err)
	}
	doneA <- nil // for the cleanup
	before := count(svcs[1])
	calls(10)
	if got := count(svcs[1]) - before; got != 10 {
		t.Errorf("after one replica stopped, %d of 10 calls reached the other", got)
	}
}
