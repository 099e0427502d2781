package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/examples/demo"
	"github.com/ambitkernel/ambit/sdk/devstack"
)

// snippet returns the fenced block after `<!-- snippet: NAME -->` in the
// README.
func snippet(t *testing.T, name string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "<!-- snippet: "+name+" -->\n```"+name+"\n")
	if !ok {
		t.Fatalf("the README has no %s snippet", name)
	}
	code, _, ok := strings.Cut(after, "\n```")
	if !ok {
		t.Fatalf("the README's %s snippet is not closed", name)
	}
	return code + "\n"
}

// TestReadmeGoSnippet runs the README's Go snippet, as written, against a
// live stack and checks what it prints.
func TestReadmeGoSnippet(t *testing.T) {
	st := startStack(t, devstack.Options{}, demo.ExpenseRefund)
	const task = "refund-c-1001"
	st.bind(t, demo.ExpenseRefund, task, demo.Claim1001)
	// A folder inside this module (ignored by ./... for its leading dot),
	// so the snippet builds against the workspace's own packages.
	dir, err := os.MkdirTemp(".", ".readme-go-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(snippet(t, "go")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(testCtx(t), "go", "run", "./"+dir)
	cmd.Env = append(os.Environ(), "AMBIT_STACK="+st.InfoPath(), "AMBIT_TASK="+task)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's Go snippet: %v\n%s", err, out)
	}
	want := "[ALL_APERTURES_SATISFIED]\ntrue true\nREADBACK_STATUS_VERIFIED\n[COMMITMENT_STATUS_VERIFIED] 0\ntrue\nERROR_REASON_FIELDS_OUTSIDE_GRANT\n"
	if string(out) != want {
		t.Errorf("the README's Go snippet printed:\n%s\nwant:\n%s", out, want)
	}
}
