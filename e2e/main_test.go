package e2e_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/client"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"go.uber.org/goleak"
)

// binDir holds the binaries TestMain builds, and examplesDir the
// examples: every test runs the real processes, configured from the
// examples' files.
var binDir, examplesDir string

func TestMain(m *testing.M) {
	if cfg := os.Getenv(preparedEnv); cfg != "" {
		os.Exit(preparedMain(cfg))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ambit-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("go", "build", "-o", dir+"/",
		"./kernel/cmd/ambit-kernel", "./kernel/cmd/ambitctl",
		"./adapters/cmd/ambit-evidence", "./adapters/cmd/ambit-action", "./adapters/cmd/ambit-mcp",
		"./verifier/cmd/ambit-verifier",
		"./examples/expense-refund/cmd/refund-data", "./examples/supportdesk/cmd/supportdesk-mcp")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
		return 1
	}
	binDir, examplesDir = dir, filepath.Join(root, "examples")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			return 1
		}
	}
	return code
}

// stack is a running stack for one test with the clients the tests use.
type stack struct {
	*devstack.Stack
	// Agent works as the first agent, Gov as the policy owner.
	Agent *client.Agent
	Gov   kernelv1.GovernanceServiceClient
	story *demo.Story
}

// Story is the demo's story on this stack, printing to out.
func (s *stack) Story(out io.Writer) *demo.Story {
	s.story.Out = out
	return s.story
}

// bind binds a task on a record under an example's contract for the
// first agent.
func (s *stack) bind(t testing.TB, example, task, record string) {
	t.Helper()
	e, ok := s.Example(example)
	if !ok {
		t.Fatalf("the stack does not run %s", example)
	}
	if _, err := demo.Bind(testCtx(t), s.Gov, e, task, record, s.Agents[0], time.Now()); err != nil {
		t.Fatal(err)
	}
}

// startStack starts the stack with the named examples (default: the
// expense refund) for one test, and stops it when the test ends, failing
// the test if any process did not stop cleanly.
func startStack(t testing.TB, o devstack.Options, examples ...string) *stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if len(examples) == 0 {
		examples = []string{demo.ExpenseRefund}
	}
	for _, e := range examples {
		o.Examples = append(o.Examples, filepath.Join(examplesDir, e))
	}
	o.BinDir, o.Dir = binDir, t.TempDir()
	st, err := devstack.Start(ctx, o)
	if err != nil {
		t.Fatalf("start the stack: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stop the stack: %v", err)
		}
	})
	story, err := demo.NewStory(ctx, st, filepath.Join(binDir, "ambitctl"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = story.Close() })
	return &stack{Stack: st, Agent: story.Agent, Gov: story.Gov, story: story}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}
