package logfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// fileHeader opens every file: what it is and its format's version.
var fileHeader = []byte("ambit-logfile v1\n")

// batchMagic begins every batch.
const batchMagic = 0x616d6231 // "amb1"

// batchHeaderSize is a batch's header: magic, first record's number,
// record count, body length, CRC-32C of what follows the magic.
const batchHeaderSize = 4 + 8 + 4 + 4 + 4

// MaxRecord bounds one record. A batch gathers appends up to
// maxBatchBytes of records, or holds one larger append alone, up to
// maxBody.
const (
	MaxRecord     = 16 << 20
	maxBatchBytes = 4 << 20
	maxBody       = maxBatchBytes + 4 + MaxRecord
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged is wrapped by Open's error for a file with a batch that does
// not check out followed by whole batches: damage, not an unfinished
// write.
var ErrDamaged = errors.New("damaged")

// Options say how a Log writes.
type Options struct {
	// Sync has each batch reach the disk (fdatasync) before its appends
	// return. Without it they return once the operating system holds the
	// write: a crash of the process loses nothing returned, a crash of the
	// machine may lose the last batches.
	Sync bool
}

// Log is an open log file. Its methods are safe for concurrent use.
type Log struct {
	f    *os.File
	sync bool

	mu      sync.Mutex
	waiting []*appending
	leading bool

	// end and count are where the next batch goes and how many records
	// are before it; the leader alone moves them, and readers load them.
	end   atomic.Int64
	count atomic.Uint64
	// broken is the first failed write or sync: after it nothing more is
	// written, as what the file holds past end is unknown. Open again to
	// recover.
	broken atomic.Pointer[error]
	buf    []byte
	// beforeWrite, when set, runs as a batch is about to be written:
	// tests hold a write there.
	beforeWrite func()
}

// appending is one Append waiting for its batch.
type appending struct {
	recs  [][]byte
	size  int
	first uint64
	err   error
	done  bool
	wake  chan struct{}
}

// Open opens the log at path, creating it if it does not exist, and
// readies it to append after its last whole batch. A batch at the end
// that does not check out (a write that did not finish) is truncated; one
// with whole batches after it fails Open with an error wrapping
// [ErrDamaged] and the file left as it is. Without Sync, a crash of the
// machine can leave that too, as the system may write a later batch's
// pages before an earlier one's: the file then needs a person.
func Open(path string, opts Options) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	l := &Log{f: f, sync: opts.Sync}
	if err := l.recover(path); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	return l, nil
}

// recover checks the header (writing it to a new file) and finds the end
// of the last whole batch.
func (l *Log) recover(path string) error {
	info, err := l.f.Stat()
	if err != nil {
		return err
	}
	if info.Size() == 0 {
		if _, err := l.f.WriteAt(fileHeader, 0); err != nil {
			return err
		}
		if err := syncData(l.f); err != nil {
			return err
		}
		// The new file's name must survive a crash as its contents do.
		if err := syncDir(filepath.Dir(path)); err != nil {
			return err
		}
		l.end.Store(int64(len(fileHeader)))
		return nil
	}
	end, count, torn, err := scanWhole(l.f, info.Size(), nil)
	if err != nil {
		return err
	}
	if torn != nil {
		// An unfinished write: never acknowledged, so dropped.
		if err := l.f.Truncate(torn.at); err != nil {
			return fmt.Errorf("truncate an unfinished batch at byte %d: %w", torn.at, err)
		}
		if err := syncData(l.f); err != nil {
			return err
		}
	}
	l.end.Store(end)
	l.count.Store(count)
	return nil
}

// scanWhole checks f's header and scans its batches to size (see scan).
// A batch that does not check out with no whole batch after it is a write
// that did not finish: the scan ends before it, and returns it as torn.
// One with whole batches after it is damage, an error wrapping
// ErrDamaged.
func scanWhole(f io.ReaderAt, size int64, fn func(n uint64, rec []byte) error) (end int64, count uint64, torn *badBatch, err error) {
	head := make([]byte, len(fileHeader))
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head, fileHeader) {
		return 0, 0, nil, fmt.Errorf("not a log file of this version (its first %d bytes are not %q)", len(fileHeader), fileHeader)
	}
	end, count, err = scan(f, size, fn)
	var bad *badBatch
	if errors.As(err, &bad) {
		if next, ok := findBatch(f, bad.at+1, size); ok {
			return 0, 0, nil, fmt.Errorf("batch at byte %d (%s) is %w: a whole batch follows at byte %d, so it is not an unfinished write; nothing was dropped", bad.at, bad.why, ErrDamaged, next)
		}
		return bad.at, bad.count, bad, nil
	}
	return end, count, nil, err
}

// badBatch is where scan met a batch that does not check out, and how
// many records came before it.
type badBatch struct {
	at    int64
	count uint64
	why   string
}

func (b *badBatch) Error() string { return fmt.Sprintf("batch at byte %d: %s", b.at, b.why) }

// scan reads the batches of f from after its header to size, calling fn
// (when not nil) with each record, and returns the end of the last whole
// batch and the records before it. A batch that does not check out stops
// it with a *badBatch.
func scan(f io.ReaderAt, size int64, fn func(n uint64, rec []byte) error) (int64, uint64, error) {
	at := int64(len(fileHeader))
	r := bufio.NewReaderSize(io.NewSectionReader(f, at, size-at), 1<<16)
	var count uint64
	header := make([]byte, batchHeaderSize)
	var body []byte
	for at < size {
		bad := func(why string) (int64, uint64, error) {
			return at, count, &badBatch{at: at, count: count, why: why}
		}
		if _, err := io.ReadFull(r, header); err != nil {
			return bad("its header is cut short")
		}
		first, n, length, ok := parseHeader(header, size-at)
		if !ok {
			return bad("its header does not check out")
		}
		if first != count {
			return bad(fmt.Sprintf("it begins at record %d, after %d records", first, count))
		}
		body = grow(body, int(length))
		if _, err := io.ReadFull(r, body); err != nil {
			return bad("it is cut short")
		}
		if checksum(header, body) != binary.LittleEndian.Uint32(header[20:]) {
			return bad("its checksum does not match")
		}
		recs, ok := split(body, n)
		if !ok {
			return bad("its records do not fill it")
		}
		if fn != nil {
			for i, rec := range recs {
				if err := fn(count+uint64(i), rec); err != nil {
					return at, count, err
				}
			}
		}
		count += uint64(n)
		at += batchHeaderSize + int64(length)
	}
	return at, count, nil
}

// parseHeader reads a batch header, checking what it can without the
// body: the magic, and a length that fits in room bytes.
func parseHeader(h []byte, room int64) (first uint64, n, length uint32, ok bool) {
	if binary.LittleEndian.Uint32(h) != batchMagic {
		return 0, 0, 0, false
	}
	first = binary.LittleEndian.Uint64(h[4:])
	n = binary.LittleEndian.Uint32(h[12:])
	length = binary.LittleEndian.Uint32(h[16:])
	if n == 0 || int64(length) > room-batchHeaderSize || length > maxBody {
		return 0, 0, 0, false
	}
	return first, n, length, true
}

// split cuts a batch's body into its n records, each a 4-byte length and
// its bytes.
func split(body []byte, n uint32) ([][]byte, bool) {
	recs := make([][]byte, 0, n)
	for range n {
		if len(body) < 4 {
			return nil, false
		}
		size := binary.LittleEndian.Uint32(body)
		if uint64(size) > uint64(len(body)-4) {
			return nil, false
		}
		recs = append(recs, body[4:4+size])
		body = body[4+size:]
	}
	return recs, len(body) == 0
}

// findBatch looks in [from, size) for a batch that checks out, so that a
// bad one with whole batches after it is told from an unfinished write.
// It reads a window at a time, and a candidate's batch alone.
func findBatch(f io.ReaderAt, from, size int64) (int64, bool) {
	magic := binary.LittleEndian.AppendUint32(nil, batchMagic)
	window := make([]byte, 1<<20)
	for at := from; at < size; at += int64(len(window) - len(magic) + 1) {
		w := window[:min(int64(len(window)), size-at)]
		if _, err := f.ReadAt(w, at); err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		for i := 0; ; i++ {
			j := bytes.Index(w[i:], magic)
			if j < 0 {
				break
			}
			i += j
			if batchAt(f, at+int64(i), size) {
				return at + int64(i), true
			}
		}
		if int64(len(w)) < int64(len(window)) {
			break
		}
	}
	return 0, false
}

// batchAt says whether a whole batch that checks out begins at byte at.
func batchAt(f io.ReaderAt, at, size int64) bool {
	header := make([]byte, batchHeaderSize)
	if _, err := f.ReadAt(header, at); err != nil {
		return false
	}
	_, n, length, ok := parseHeader(header, size-at)
	if !ok {
		return false
	}
	body := make([]byte, length)
	if _, err := f.ReadAt(body, at+batchHeaderSize); err != nil {
		return false
	}
	if checksum(header, body) != binary.LittleEndian.Uint32(header[20:]) {
		return false
	}
	_, ok = split(body, n)
	return ok
}

// checksum is a batch's CRC-32C: of its header after the magic, up to
// the checksum, and of its body.
func checksum(header, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(header[4:20], castagnoli), castagnoli, body)
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// Len is how many records the log holds (all of them acknowledged).
func (l *Log) Len() uint64 { return l.count.Load() }

// Append adds recs to the log as consecutive records and returns the
// first one's number once their batch is written, and synced when the log
// syncs. Records appended by concurrent calls share a batch; each call's
// records stay together and in order. An error means none of recs is
// acknowledged; after a failed write or sync every later Append fails
// too, as what the file holds past its last acknowledged batch is then
// unknown: Open it again.
func (l *Log) Append(recs ...[]byte) (uint64, error) {
	if len(recs) == 0 {
		return 0, errors.New("append: no records")
	}
	size := 0
	for i, r := range recs {
		if len(r) > MaxRecord {
			return 0, fmt.Errorf("append: record %d is %d bytes, more than %d", i, len(r), MaxRecord)
		}
		size += 4 + len(r)
	}
	if size > maxBody {
		return 0, fmt.Errorf("append: %d bytes of records in one call, more than %d", size, maxBody)
	}
	if err := l.brokenErr(); err != nil {
		return 0, err
	}
	me := &appending{recs: recs, size: size, wake: make(chan struct{}, 1)}
	l.mu.Lock()
	l.waiting = append(l.waiting, me)
	if l.leading {
		l.mu.Unlock()
		<-me.wake
		if me.done {
			return me.first, me.err
		}
		l.mu.Lock()
	}
	l.leading = true
	// What gathered while the batch before was written goes in this one.
	var batch []*appending
	n := 0
	for len(l.waiting) > 0 && (len(batch) == 0 || n+l.waiting[0].size <= maxBatchBytes) {
		n += l.waiting[0].size
		batch, l.waiting = append(batch, l.waiting[0]), l.waiting[1:]
	}
	l.mu.Unlock()

	err := l.write(batch, n)
	for _, a := range batch {
		if a.err == nil {
			a.err = err
		}
		if a != me {
			a.done = true
			a.wake <- struct{}{}
		}
	}
	l.mu.Lock()
	if len(l.waiting) > 0 {
		l.waiting[0].wake <- struct{}{} // the lead passes on
	} else {
		l.leading = false
	}
	l.mu.Unlock()
	return me.first, me.err
}

// write writes one batch of n bytes of records at the end, numbering its
// appends' records.
func (l *Log) write(batch []*appending, n int) error {
	if err := l.brokenErr(); err != nil {
		return err
	}
	if l.beforeWrite != nil {
		l.beforeWrite()
	}
	first, records := l.count.Load(), 0
	buf := grow(l.buf, batchHeaderSize+n)[:batchHeaderSize]
	for _, a := range batch {
		a.first = first + uint64(records)
		records += len(a.recs)
		for _, r := range a.recs {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(len(r)))
			buf = append(buf, r...)
		}
	}
	binary.LittleEndian.PutUint32(buf, batchMagic)
	binary.LittleEndian.PutUint64(buf[4:], first)
	binary.LittleEndian.PutUint32(buf[12:], uint32(records))
	binary.LittleEndian.PutUint32(buf[16:], uint32(n))
	binary.LittleEndian.PutUint32(buf[20:], checksum(buf[:batchHeaderSize], buf[batchHeaderSize:]))
	if cap(buf) <= 1<<20 {
		l.buf = buf // keep a buffer for the next batch, not a huge one
	}
	end := l.end.Load()
	if _, err := l.f.WriteAt(buf, end); err != nil {
		return l.breakOn(fmt.Errorf("write batch at byte %d: %w", end, err))
	}
	if l.sync {
		if err := syncData(l.f); err != nil {
			return l.breakOn(fmt.Errorf("sync batch at byte %d: %w", end, err))
		}
	}
	l.end.Store(end + int64(len(buf)))
	l.count.Store(first + uint64(records))
	return nil
}

func (l *Log) breakOn(err error) error {
	l.broken.CompareAndSwap(nil, &err)
	return err
}

func (l *Log) brokenErr() error {
	if p := l.broken.Load(); p != nil {
		return fmt.Errorf("log stopped after an earlier failure: %w", *p)
	}
	return nil
}

// Scan calls fn with each acknowledged record in order, from the first:
// those appended before Scan began. rec is valid only during the call.
// fn's error stops the scan and is returned.
func (l *Log) Scan(fn func(n uint64, rec []byte) error) error {
	_, _, err := scan(l.f, l.end.Load(), fn)
	return err
}

// ScanFile calls fn with each acknowledged record of the log at path, in
// order, reading it only: a tool that must not write to it reads it so.
// A log that does not exist holds none, and a batch whose write did not
// finish is passed over, as Open would drop it. rec is valid only during
// the call; fn's error stops the scan and is returned.
func ScanFile(path string, fn func(n uint64, rec []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read log %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read log %s: %w", path, err)
	}
	if info.Size() == 0 {
		return nil // created, its header not written yet
	}
	if _, _, _, err := scanWhole(f, info.Size(), fn); err != nil {
		return fmt.Errorf("read log %s: %w", path, err)
	}
	return nil
}

// Size is the file's length in bytes.
func (l *Log) Size() int64 { return l.end.Load() }

// Reset empties the log, once what it holds is kept elsewhere: the file
// keeps its header alone, and numbering starts again at zero. No Append
// may run meanwhile.
func (l *Log) Reset() error {
	if err := l.brokenErr(); err != nil {
		return err
	}
	if err := l.f.Truncate(int64(len(fileHeader))); err != nil {
		return l.breakOn(fmt.Errorf("reset: %w", err))
	}
	if l.sync {
		if err := syncData(l.f); err != nil {
			return l.breakOn(fmt.Errorf("reset: %w", err))
		}
	}
	l.end.Store(int64(len(fileHeader)))
	l.count.Store(0)
	return nil
}

// Close closes the file. Appends must have returned.
func (l *Log) Close() error { return l.f.Close() }
