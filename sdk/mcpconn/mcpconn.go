package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config names one upstream MCP server: exactly one of Command (argv of a
// server spoken to over stdio) or URL (a streamable HTTP endpoint).
type Config struct {
	Command []string `json:"command,omitempty"`
	URL     string   `json:"url,omitempty"`
}

// Validate checks that exactly one way to reach the server is given.
func (c Config) Validate() error {
	switch {
	case len(c.Command) > 0 && c.URL != "":
		return errors.New("give either command or url, not both")
	case len(c.Command) == 0 && c.URL == "":
		return errors.New("command or url is required")
	case c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
		return fmt.Errorf("url %q is not http(s)", c.URL)
	}
	return nil
}

// ErrTool marks a call the upstream tool answered with an error result.
var ErrTool = errors.New("upstream tool failed")

// Session is a connection to one upstream server, re-established on the
// next call after it breaks. It is safe for concurrent use.
type Session struct {
	cfg  Config
	name string

	mu sync.Mutex
	cs *mcp.ClientSession
}

// Dial connects to the server; name identifies this client to it.
func Dial(ctx context.Context, cfg Config, name string) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("mcp server: %w", err)
	}
	s := &Session{cfg: cfg, name: name}
	if _, err := s.session(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Session) session(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil {
		return s.cs, nil
	}
	var t mcp.Transport
	if len(s.cfg.Command) > 0 {
		t = &mcp.CommandTransport{Command: exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, DisableStandaloneSSE: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: s.name, Version: "v1"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to mcp server %s: %w", s.where(), err)
	}
	s.cs = cs
	return cs, nil
}

func (s *Session) where() string {
	if s.cfg.URL != "" {
		return s.cfg.URL
	}
	return s.cfg.Command[0]
}

// Call calls tool with args and returns its result as JSON: the structured
// content when the tool gives one, otherwise its text content if that is
// JSON. An error result is ErrTool with the tool's text; a broken
// connection is dropped so the next call reconnects.
func (s *Session) Call(ctx context.Context, tool string, args map[string]any) (json.RawMessage, error) {
	cs, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		s.drop(cs)
		return nil, fmt.Errorf("call %s on %s: %w", tool, s.where(), err)
	}
	text := texts(res)
	if res.IsError {
		return nil, fmt.Errorf("%w: %s: %s", ErrTool, tool, text)
	}
	if res.StructuredContent != nil {
		out, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("call %s: structured content: %w", tool, err)
		}
		return out, nil
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text), nil
	}
	return nil, fmt.Errorf("call %s on %s: the result is neither structured nor JSON text", tool, s.where())
}

func texts(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func (s *Session) drop(cs *mcp.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs == cs {
		_ = cs.Close()
		s.cs = nil
	}
}

// Close ends the session (and stops a stdio server).
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs == nil {
		return nil
	}
	err := s.cs.Close()
	s.cs = nil
	return err
}
