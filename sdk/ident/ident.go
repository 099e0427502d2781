package ident

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// New returns, in hex, the current time in milliseconds (48 bits) and
// then as many random bytes as random says. Leading with the time keeps a
// store's indexes on identifiers appending at their end instead of
// touching a random page per row, which each commit would write again;
// the random bytes keep identifiers of the same millisecond apart.
func New(random int) string {
	b := make([]byte, 8+random)
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli()))
	// crypto/rand.Read never fails on supported platforms (it panics
	// instead of returning a short read).
	_, _ = rand.Read(b[8:])
	return hex.EncodeToString(b[2:])
}
