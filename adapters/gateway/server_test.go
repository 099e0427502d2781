package gateway_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ambitkernel/ambit/adapters/gateway"
	"github.com/ambitkernel/ambit/sdk/client"
)

// TestKernelDown: with nothing listening where the kernel should be, the
// gateway lists nothing and says why, rather than listing tools it cannot
// vouch for; a client still gets a session of the protocol versions with
// sessions.
func TestKernelDown(t *testing.T) {
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	g := gateway.New(client.New(client.Conns{Kernel: conn, Evidence: conn, Action: conn, Verifier: conn}),
		gateway.Options{TaskID: "task-1", Purpose: "p"})
	ct, st := mcp.NewInMemoryTransports()
	ctx := t.Context()
	ss, err := g.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v >= "2026-07-28" {
		t.Errorf("negotiated %s, a protocol without sessions", v)
	}
	_, err = cs.ListTools(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "ambit-mcp cannot list task task-1's grant") {
		t.Errorf("listing with the kernel down: %v", err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "cannot list") {
		t.Errorf("a call with the kernel down: %v", err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: gateway.SelfViewURI})
	if err == nil || !strings.Contains(err.Error(), "self-view of task task-1") {
		t.Errorf("the self-view with the kernel down: %v", err)
	}
}
