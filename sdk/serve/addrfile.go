package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
