package evidence

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// contentDomain separates the content hash from every other SHA-256 in
// Ambit.
const contentDomain = "ambit-evidence-content-v1"

// ContentHash is the hex SHA-256 of released values, as an evidence
// receipt's content_hash records it. The hashed bytes are
//
//	"ambit-evidence-content-v1" || for each field in byte order:
//	    len(field) || field || len(value) || value
//
// with lengths as 8-byte big-endian integers, so that no two different
// sets of values encode alike and map order does not matter.
func ContentHash(values map[string]string) string {
	fields := make([]string, 0, len(values))
	for f := range values {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	h := sha256.New()
	h.Write([]byte(contentDomain))
	var n [8]byte
	for _, f := range fields {
		v := values[f]
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil))
}
