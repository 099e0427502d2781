//go:build !linux

package logfile

import "os"

// syncData has f's data reach the disk.
func syncData(f *os.File) error { return f.Sync() }
