package logfile

import (
	"errors"
	"os"
)

// syncDir has a directory's entries (a file just created in it) reach the
// disk.
func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
