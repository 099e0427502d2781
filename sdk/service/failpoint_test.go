package service_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

func TestParseFailpoints(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		armed []string
		err   string
	}{
		{spec: "", armed: nil},
		{spec: "  ", armed: nil},
		{spec: "reply:SubmitProposal", armed: []string{"reply:SubmitProposal"}},
		{spec: "call:RecordEffect@3, action.after-commit ,answer:RedeemCapability@1",
			armed: []string{"action.after-commit", "answer:RedeemCapability", "call:RecordEffect@3"}},
		{spec: "reply:", err: "needs a gRPC method's short name"},
		{spec: "call:/pkg.Service/Method", err: "needs a gRPC method's short name"},
		{spec: "Kernel After Commit", err: "a failpoint is reply:<Method>"},
		{spec: "x.y@0", err: "positive integer"},
		{spec: "x.y@later", err: "positive integer"},
		{spec: "x.y,x.y@2", err: "armed twice"},
		{spec: "ok.one,bad one", err: `"bad one"`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			f, err := service.ParseFailpoints(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), service.FailpointEnv) {
					t.Fatalf("ParseFailpoints(%q) = %v, want an error naming %s and containing %q", tc.spec, err, service.FailpointEnv, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.armed, f.Armed()); diff != "" {
				t.Errorf("armed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailpointHook: a process's own point fires at its armed occurrence
// only; a point that is not armed has no hook.
func TestFailpointHook(t *testing.T) {
	var nilSet *service.Failpoints
	if nilSet.Hook("x.y") != nil || nilSet.Armed() != nil {
		t.Error("a nil set arms something")
	}
	f, err := service.ParseFailpoints("x.y@2")
	if err != nil {
		t.Fatal(err)
	}
	if f.Hook("x.z") != nil {
		t.Error("hook for a point that is not armed")
	}
	if f.Hook("x.y") == nil {
		t.Fatal("no hook for an armed point")
	}
}

// failpointApp is a sidecar serving a TestService whose EmptyCall
// succeeds and UnaryCall fails, with its failpoints' kills recorded in
// fired instead of killing the test. It claims "app.own" and fires it
// on every EmptyCall before answering.
func failpointApp(env map[string]string, fired chan<- string) func(context.Context, []string, io.Writer) error {
	return func(ctx context.Context, args []string, out io.Writer) error {
		_, err := mainApp(ctx, args, out, env, func(ctx context.Context, s *service.Sidecar) error {
			srv := &failpointServer{own: s.Failpoint("app.own")}
			if strings.Contains(env[service.FailpointEnv], "app.own") && srv.own == nil {
				return fmt.Errorf("app.own armed but no hook")
			}
			service.SetFailpointKill(s.Process, func(name string) { fired <- name })
			testpb.RegisterTestServiceServer(s.Server, srv)
			return s.Serve(ctx)
		})
		return err
	}
}

type failpointServer struct {
	testpb.UnimplementedTestServiceServer
	own func()
}

func (s *failpointServer) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	if s.own != nil {
		s.own()
	}
	return &testpb.Empty{}, nil
}

// TestFailpointsFire runs a sidecar with failpoints armed through the
// environment: a reply point fires after its method's second success and
// never after a failure, a process's own point where the process calls
// it, and the call and answer points around the sidecar's health probe of
// its kernel.
func TestFailpointsFire(t *testing.T) {
	root := servicetest.PKI(t)
	kernel := startFakeKernel(t, root)
	cfg := writeFile(t, fmt.Sprintf("pki_dir: %s\nidentity: evidence\nkernel: %s\ndatabase: d\nlog_level: error\n",
		pki.IdentityDir(root, "evidence"), kernel.addr))
	fired := make(chan string, 16)
	env := map[string]string{service.FailpointEnv: "reply:EmptyCall@2,reply:UnaryCall,app.own@3,call:Check,answer:Check"}
	s := servicetest.Start(t, failpointApp(env, fired), "--config", cfg)
	// The first health probe of the kernel runs before serving starts.
	for _, want := range []string{"call:Check", "answer:Check"} {
		if got := <-fired; got != want {
			t.Fatalf("fired %s, want %s", got, want)
		}
	}
	for i := range 3 {
		err := servicetest.Call(t, root, "governance", pki.RoleEvidence, s.Addr, func(ctx context.Context, conn *grpc.ClientConn) error {
			c := testpb.NewTestServiceClient(conn)
			if _, err := c.UnaryCall(ctx, &testpb.SimpleRequest{}); err == nil {
				return fmt.Errorf("UnaryCall succeeded")
			}
			_, err := c.EmptyCall(ctx, &testpb.Empty{})
			return err
		})
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	close(fired)
	var got []string
	for name := range fired {
		got = append(got, name)
	}
	// reply:EmptyCall at the second EmptyCall, app.own at the third;
	// reply:UnaryCall never (every UnaryCall failed); the probes' own
	// points fired once each, above.
	if diff := cmp.Diff([]string{"reply:EmptyCall", "app.own"}, got); diff != "" {
		t.Errorf("fired (-want +got):\n%s", diff)
	}
}

// TestFailpointsThatCannotFire: a failpoint that names a method nobody
// serves or calls, or a point the process does not have, stops the
// process before it serves.
func TestFailpointsThatCannotFire(t *testing.T) {
	root := servicetest.PKI(t)
	cfg := writeFile(t, fmt.Sprintf("pki_dir: %s\nidentity: evidence\nkernel: %s\ndatabase: d\nlog_level: error\n",
		pki.IdentityDir(root, "evidence"), servicetest.DeadAddr(t)))
	for _, tc := range []struct{ spec, want string }{
		{"reply:SubmitProposal", "this process serves no method SubmitProposal"},
		{"call:NoSuchMethod", "no known service has a method NoSuchMethod"},
		{"answer:NoSuchMethod", "no known service has a method NoSuchMethod"},
		{"app.other", "app.other: this process has no such failpoint"},
		{"reply:Bad Name", "needs a gRPC method's short name"},
	} {
		env := map[string]string{service.FailpointEnv: tc.spec}
		err := failpointApp(env, make(chan string, 16))(context.Background(), []string{"--config", cfg, "--addr-file", filepath.Join(t.TempDir(), "a")}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Main = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}
