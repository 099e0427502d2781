package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/e2e/cluster"
	"github.com/ambitkernel/ambit/e2e/demo"
	"go.uber.org/goleak"
)

// binDir holds the binaries TestMain builds: every test runs the real
// processes.
var binDir string

func TestMain(m *testing.M) {
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
		"./adapters/cmd/ambit-evidence", "./adapters/cmd/ambit-action",
		"./verifier/cmd/ambit-verifier")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
		return 1
	}
	binDir = dir
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			return 1
		}
	}
	return code
}

// startCluster starts the four processes for one test and stops them when
// it ends, failing the test if any did not stop cleanly.
func startCluster(t testing.TB, o cluster.Options) (*cluster.Cluster, *demo.Clients) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o.BinDir = binDir
	o.Dir = t.TempDir()
	if o.Seed == nil {
		o.Seed = demo.Seed
	}
	c, err := cluster.Start(ctx, o)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	k, err := demo.Connect(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
