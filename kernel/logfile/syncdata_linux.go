package logfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData has f's data, and the size it needs to be read back, reach the
// disk: fdatasync, which leaves times and other metadata to later.
func syncData(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
