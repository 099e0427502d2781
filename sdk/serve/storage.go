package serve

import (
	"errors"
	"syscall"
)

// SQLite primary result codes that mean the storage cannot serve a write
// now, whatever the statement: the database is locked or busy, read-only,
// failing I/O, full, or cannot be opened.
var storageCodes = map[int]bool{
	5:  true, // SQLITE_BUSY
	6:  true, // SQLITE_LOCKED
	8:  true, // SQLITE_READONLY
	10: true, // SQLITE_IOERR
	13: true, // SQLITE_FULL
	14: true, // SQLITE_CANTOPEN
}

// resultCoder is implemented by SQLite driver errors (modernc.org/sqlite's
// *Error) carrying an extended result code, whose low byte is the primary
// code.
type resultCoder interface{ Code() int }

// StorageUnavailable reports whether err means the process's storage
// cannot take a write at the moment — disk full, read-only file system or
// database, I/O error, a database locked past its busy timeout — as
// opposed to a defect. Such failures are answered Unavailable.
func StorageUnavailable(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EDQUOT, syscall.EIO} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var rc resultCoder
	return errors.As(err, &rc) && storageCodes[rc.Code()&0xff]
}
