package mcpconn_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ambitkernel/ambit/sdk/mcpconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Name string `json:"name"`
}

type echoOut struct {
	Greeting string `json:"greeting"`
	Length   int    `json:"length"`
}

// server is a real MCP server on a loopback HTTP listener.
func server(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
		if in.Name == "" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "name is required"}}}, echoOut{}, nil
		}
		return nil, echoOut{Greeting: "hello " + in.Name, Length: len(in.Name)}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestCall(t *testing.T) {
	ctx := context.Background()
	sess, err := mcpconn.Dial(ctx, mcpconn.Config{URL: server(t)}, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	raw, err := sess.Call(ctx, "greet", map[string]any{"name": "ada"})
	if err != nil {
		t.Fatal(err)
	}
	var out echoOut
	if err := json.Unmarshal(raw, &out); err != nil || out.Greeting != "hello ada" || out.Length != 3 {
		t.Fatalf("result = %s, %v", raw, err)
	}
	if _, err := sess.Call(ctx, "greet", map[string]any{"name": ""}); !errors.Is(err, mcpconn.ErrTool) {
		t.Errorf("error result = %v, want ErrTool", err)
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []mcpconn.Config{{}, {URL: "ftp://x"}, {URL: "http://x", Command: []string{"x"}}} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}
