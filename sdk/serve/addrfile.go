package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WriteAddrFile writes addrs (listener name → host:port, as passed to the
// ready callback of [Run]) to path as a JSON object. The file is replaced
// atomically: a reader polling for it sees no file or the whole file.
func WriteAddrFile(path string, addrs map[string]string) (err error) {
	data, err := json.MarshalIndent(addrs, "", "  ")
	if err != nil {
		return fmt.Errorf("write addr file: %w", err)
	}
	data = append(data, '\n')
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write addr file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write addr file: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return fmt.Errorf("write addr file: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("write addr file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write addr file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write addr file: %w", err)
	}
	return nil
}

// ErrExited is WaitAddrFile's error when the process it waits for exits
// before writing its address file.
var ErrExited = errors.New("the process exited before it wrote its address file")

// WaitAddrFile polls path every poll until it holds the addresses
// WriteAddrFile writes, and returns them. It stops with ErrExited once
// exited is closed, and with ctx's error when ctx ends; a file that is
// there but not an object of addresses is an error at once.
func WaitAddrFile(ctx context.Context, path string, exited <-chan struct{}, poll time.Duration) (map[string]string, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-exited:
			return nil, ErrExited
		case <-ctx.Done():
			return nil, fmt.Errorf("no address file %s: %w", path, ctx.Err())
		case <-t.C:
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("address file: %w", err)
		}
		var addrs map[string]string
		if err := json.Unmarshal(data, &addrs); err != nil || len(addrs) == 0 {
			return nil, fmt.Errorf("address file %s holds no addresses: %q", path, data)
		}
		return addrs, nil
	}
}
