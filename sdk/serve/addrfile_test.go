package serve_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/google/go-cmp/cmp"
)

// TestWaitAddrFile reads what WriteAddrFile writes once it is there, and
// stops when the process exits first, when the wait ends, or when the
// file holds no addresses.
func TestWaitAddrFile(t *testing.T) {
	const poll = 5 * time.Millisecond
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("written later", func(t *testing.T) {
		path := filepath.Join(dir, "later.json")
		want := map[string]string{"agent": "127.0.0.1:7001", "metrics": "127.0.0.1:9001"}
		written := make(chan error, 1)
		go func() {
			time.Sleep(10 * poll)
			written <- serve.WriteAddrFile(path, want)
		}()
		got, err := serve.WaitAddrFile(ctx, path, nil, poll)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-written; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("addresses (-want +got):\n%s", diff)
		}
	})
	t.Run("exited", func(t *testing.T) {
		exited := make(chan struct{})
		close(exited)
		if _, err := serve.WaitAddrFile(ctx, filepath.Join(dir, "never.json"), exited, poll); !errors.Is(err, serve.ErrExited) {
			t.Errorf("err = %v, want ErrExited", err)
		}
	})
	t.Run("wait ends", func(t *testing.T) {
		short, stop := context.WithTimeout(ctx, 10*poll)
		defer stop()
		if _, err := serve.WaitAddrFile(short, filepath.Join(dir, "never.json"), nil, poll); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("no addresses", func(t *testing.T) {
		for name, data := range map[string]string{"empty.json": "{}\n", "list.json": `["127.0.0.1:7001"]`} {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			if addrs, err := serve.WaitAddrFile(ctx, path, nil, poll); err == nil {
				t.Errorf("%s: got %v, want an error", name, addrs)
			}
		}
	})
}
