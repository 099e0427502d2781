package canon

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
)

// A snapshot is a State's facts written down, so that a kernel can start
// from it and fold only the transitions recorded since, instead of every
// transition of its journal. It is never the truth: the journal is. Its
// contracts are left out (compacted, see Compact), its items carry their
// content hashes, and the kernel checks it against the journal it claims to
// follow before it uses it.

// snapshotMagic opens every snapshot; snapshotVersion changes whenever the
// encoding or the rules Apply enforces change, so that a snapshot written
// under other rules is never taken for what a replay would give.
const (
	snapshotMagic   = "ambit.ledger.snapshot\n"
	snapshotVersion = 1
)

// ErrSnapshot marks a snapshot that cannot be used: malformed, of another
// version, or taken under other authorities.
var ErrSnapshot = errors.New("unusable ledger snapshot")

// Snapshot is a copy of a State's facts at one moment. Taking it copies
// one small record per item, so its owner may write it out while the state
// moves on.
type Snapshot struct {
	records []record
	last    time.Time
}

// Snapshot copies s's facts. The items are shared: a stored item is never
// modified (see record.item).
func (s *State) Snapshot() *Snapshot {
	out := &Snapshot{records: make([]record, len(s.order)), last: s.last}
	for i, id := range s.order {
		out.records[i] = *s.records[id]
	}
	return out
}

// Len is the number of items in the snapshot.
func (sn *Snapshot) Len() int { return len(sn.records) }

// Fingerprint names the authorities: a snapshot folded under other
// authorities may hold transitions these would refuse, so it is used only
// under the same ones.
func (a Authorities) Fingerprint() string {
	scopes := make([]ledgerv1.Scope, 0, len(a))
	for sc := range a {
		scopes = append(scopes, sc)
	}
	slices.Sort(scopes)
	h := sha256.New()
	for _, sc := range scopes {
		ps := slices.Clone(a[sc])
		slices.Sort(ps)
		ps = slices.Compact(ps)
		fmt.Fprintf(h, "%d:%d\n", sc, len(ps))
		for _, p := range ps {
			fmt.Fprintf(h, "%d:%s\n", len(p), p)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// WriteTo writes the snapshot, taken under auth, to w.
func (sn *Snapshot) WriteTo(w io.Writer, auth Authorities) error {
	e := snapshotWriter{w: bufio.NewWriterSize(w, 64<<10)}
	e.raw([]byte(snapshotMagic))
	e.uint(snapshotVersion)
	e.string(auth.Fingerprint())
	e.time(sn.last)
	e.uint(uint64(len(sn.records)))
	marshal := proto.MarshalOptions{Deterministic: true}
	var buf []byte
	for i := range sn.records {
		r := &sn.records[i]
		item := r.item
		if item.GetContract() != nil {
			item = shallow(item)
			item.Contract = nil
		}
		var err error
		if buf, err = marshal.MarshalAppend(buf[:0], item); err != nil {
			return fmt.Errorf("write ledger snapshot: item %q: %w", item.GetCanonItemId(), err)
		}
		e.bytes(buf)
		e.string(r.proposer)
		e.time(r.recordedAt)
		if r.filter == nil {
			e.uint(0)
		} else {
			if buf, err = marshal.MarshalAppend(buf[:0], r.filter); err != nil {
				return fmt.Errorf("write ledger snapshot: filter of %q: %w", item.GetCanonItemId(), err)
			}
			e.uint(1)
			e.bytes(buf)
		}
		e.string(r.rejectedBy)
		e.string(r.resolvedBy)
		e.string(r.supersededBy)
		e.time(r.supersededAt)
		e.string(r.task)
	}
	e.raw([]byte(snapshotMagic))
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return fmt.Errorf("write ledger snapshot: %w", e.err)
	}
	return nil
}

// ReadSnapshot reads a snapshot that WriteTo wrote under the same
// authorities into a compacted State (see Compact), which loads contracts
// through content. A snapshot of another version or other authorities is
// refused with ErrSnapshot, as is a malformed one.
func ReadSnapshot(r io.Reader, auth Authorities, content ContentFunc) (*State, error) {
	d := snapshotReader{r: bufio.NewReaderSize(r, 64<<10)}
	if d.magic(); d.err != nil {
		return nil, d.fail("header")
	}
	if v := d.uint(); d.err == nil && v != snapshotVersion {
		return nil, fmt.Errorf("ledger snapshot version %d, not %d: %w", v, snapshotVersion, ErrSnapshot)
	}
	if fp := d.string(); d.err == nil && fp != auth.Fingerprint() {
		return nil, fmt.Errorf("ledger snapshot taken under other authorities: %w", ErrSnapshot)
	}
	s := &State{content: content}
	s.last = d.time()
	n := d.uint()
	if d.err != nil {
		return nil, d.fail("header")
	}
	// The count is the writer's word; a corrupt one must not allocate
	// without bound.
	recs := make([]record, 0, min(n, 1<<20))
	contracts := 0
	for i := uint64(0); i < n; i++ {
		r := record{item: &ledgerv1.CanonItem{}}
		b := d.bytes()
		if d.err != nil {
			return nil, d.fail(fmt.Sprintf("item %d", i))
		}
		if err := proto.Unmarshal(b, r.item); err != nil {
			return nil, fmt.Errorf("ledger snapshot item %d: %v: %w", i, err, ErrSnapshot)
		}
		r.proposer = d.name()
		r.recordedAt = d.time()
		if d.uint() == 1 {
			r.filter = &ledgerv1.HandoffFilter{}
			if err := proto.Unmarshal(d.bytes(), r.filter); err != nil && d.err == nil {
				return nil, fmt.Errorf("ledger snapshot item %d: filter: %v: %w", i, err, ErrSnapshot)
			}
		}
		r.rejectedBy = d.name()
		r.resolvedBy = d.name()
		r.supersededBy = d.string()
		r.supersededAt = d.time()
		r.task = d.string()
		if d.err != nil {
			return nil, d.fail(fmt.Sprintf("item %d", i))
		}
		if r.task != "" {
			contracts++
		}
		recs = append(recs, r)
	}
	// The maps are sized once the items are known, so that a ledger of
	// millions is not rehashed on its way in.
	s.order = make([]string, 0, len(recs))
	s.records = make(map[string]*record, len(recs))
	if contracts > 0 {
		s.refs.contracts = make(map[string][]string, contracts)
	}
	for i := range recs {
		r := &recs[i]
		id := r.item.GetCanonItemId()
		// A repeated id leaves the map short of an entry: one map
		// operation an item, not a lookup and then a store.
		s.records[id] = r
		if len(s.records) != i+1 || id == "" {
			return nil, fmt.Errorf("ledger snapshot item %d: id %q empty or repeated: %w", i, id, ErrSnapshot)
		}
		r.place = len(s.order)
		s.order = append(s.order, id)
		s.refs.add(r.item, r.task)
	}
	if d.magic(); d.err != nil {
		return nil, d.fail("trailer")
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("ledger snapshot: data after the trailer: %w", ErrSnapshot)
	}
	s.compacted = len(s.order)
	return s, nil
}

// snapshotWriter encodes: unsigned varints, length-prefixed bytes, times
// as a presence byte, signed seconds and nanoseconds. The first error
// sticks.
type snapshotWriter struct {
	w   *bufio.Writer
	err error
	tmp [binary.MaxVarintLen64]byte
}

func (e *snapshotWriter) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *snapshotWriter) uint(v uint64) { e.raw(binary.AppendUvarint(e.tmp[:0], v)) }

func (e *snapshotWriter) bytes(b []byte) {
	e.uint(uint64(len(b)))
	e.raw(b)
}

func (e *snapshotWriter) string(s string) {
	e.uint(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *snapshotWriter) time(t time.Time) {
	if t.IsZero() {
		e.uint(0)
		return
	}
	e.uint(1)
	e.raw(binary.AppendVarint(e.tmp[:0], t.Unix()))
	e.uint(uint64(t.Nanosecond()))
}

// snapshotReader decodes what snapshotWriter encodes; the first error
// sticks and later reads return zero values.
type snapshotReader struct {
	r   *bufio.Reader
	err error
	// buf is reused by every field, which is copied out of it.
	buf []byte
	// names interns the principals: a ledger has few, each named by
	// millions of items.
	names map[string]string
}

// maxSnapshotField bounds one field, so that a corrupt length cannot ask
// for an unbounded allocation.
const maxSnapshotField = 64 << 20

func (d *snapshotReader) fail(where string) error {
	return fmt.Errorf("ledger snapshot %s: %v: %w", where, d.err, ErrSnapshot)
}

func (d *snapshotReader) magic() {
	b := make([]byte, len(snapshotMagic))
	if d.err == nil {
		_, d.err = io.ReadFull(d.r, b)
	}
	if d.err == nil && string(b) != snapshotMagic {
		d.err = errors.New("not a ledger snapshot")
	}
}

func (d *snapshotReader) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	d.err = err
	return v
}

// bytes reads a length-prefixed field into buf; the result is valid until
// the next read.
func (d *snapshotReader) bytes() []byte {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	if n > maxSnapshotField {
		d.err = fmt.Errorf("field of %d bytes", n)
		return nil
	}
	if uint64(cap(d.buf)) < n {
		d.buf = make([]byte, n)
	}
	b := d.buf[:n]
	if _, d.err = io.ReadFull(d.r, b); d.err != nil {
		return nil
	}
	return b
}

func (d *snapshotReader) string() string { return string(d.bytes()) }

// name reads a string that many items repeat.
func (d *snapshotReader) name() string {
	b := d.bytes()
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	if d.names == nil {
		d.names = map[string]string{}
	}
	s := string(b)
	if len(d.names) < 1<<16 {
		d.names[s] = s
	}
	return s
}

func (d *snapshotReader) time() time.Time {
	if d.uint() == 0 || d.err != nil {
		return time.Time{}
	}
	sec, err := binary.ReadVarint(d.r)
	if err != nil {
		d.err = err
		return time.Time{}
	}
	nsec := d.uint()
	if nsec >= 1e9 {
		d.err = fmt.Errorf("nanoseconds %d", nsec)
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
