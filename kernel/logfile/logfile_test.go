package logfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func open(t *testing.T, path string, sync bool) *Log {
	t.Helper()
	l, err := Open(path, Options{Sync: sync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// records reads every record of l.
func records(t *testing.T, l *Log) []string {
	t.Helper()
	var got []string
	err := l.Scan(func(n uint64, rec []byte) error {
		if n != uint64(len(got)) {
			return fmt.Errorf("record %d numbered %d", len(got), n)
		}
		got = append(got, string(rec))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustAppend(t *testing.T, l *Log, recs ...string) uint64 {
	t.Helper()
	bs := make([][]byte, len(recs))
	for i, r := range recs {
		bs[i] = []byte(r)
	}
	first, err := l.Append(bs...)
	if err != nil {
		t.Fatal(err)
	}
	return first
}

func TestAppendReopenScan(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l := open(t, path, sync)
			want := []string{"a", "", strings.Repeat("b", 70_000), "c"}
			if first := mustAppend(t, l, want[:3]...); first != 0 {
				t.Fatalf("first record numbered %d", first)
			}
			if first := mustAppend(t, l, want[3]); first != 3 {
				t.Fatalf("fourth record numbered %d", first)
			}
			if l.Len() != 4 {
				t.Fatalf("Len %d, want 4", l.Len())
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = open(t, path, sync)
			if got := records(t, l); !equal(got, want) {
				t.Fatalf("after reopening: %d records, want %d", len(got), len(want))
			}
			if first := mustAppend(t, l, "d"); first != 4 {
				t.Fatalf("record after reopening numbered %d, want 4", first)
			}
			if got := records(t, l); len(got) != 5 || got[4] != "d" {
				t.Fatalf("records %q", got[3:])
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAppendsShareABatch holds a batch's write until ten more appends
// wait: they are written together, in one batch after it, each call's
// records together and in order.
func TestAppendsShareABatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l := open(t, path, false)
	release := make(chan struct{})
	var once sync.Once
	l.beforeWrite = func() { once.Do(func() { <-release }) }
	var wg sync.WaitGroup
	wg.Go(func() { mustAppend(t, l, "first") })
	waiting := func(n int) {
		for {
			l.mu.Lock()
			w, leading := len(l.waiting), l.leading
			l.mu.Unlock()
			if leading && w == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waiting(0) // the first leads: it is no longer waiting
	for i := range 10 {
		wg.Go(func() { mustAppend(t, l, fmt.Sprintf("%d.0", i), fmt.Sprintf("%d.1", i)) })
	}
	waiting(10)
	close(release)
	wg.Wait()

	if n := batches(t, path); n != 2 {
		t.Fatalf("%d batches, want 2 (the first, then the ten that waited)", n)
	}
	got := records(t, l)
	if len(got) != 21 || got[0] != "first" {
		t.Fatalf("records %q", got)
	}
	for i := 1; i < len(got); i += 2 {
		call, _, _ := strings.Cut(got[i], ".")
		if got[i] != call+".0" || got[i+1] != call+".1" {
			t.Fatalf("records %d and %d are %q and %q, not one call's in order", i, i+1, got[i], got[i+1])
		}
	}
}

// batches counts the batches of the log at path.
func batches(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for at := len(fileHeader); at < len(data); n++ {
		_, _, length, ok := parseHeader(data[at:at+batchHeaderSize], int64(len(data)-at))
		if !ok {
			t.Fatalf("no batch header at byte %d", at)
		}
		at += batchHeaderSize + int(length)
	}
	return n
}

// threeBatches writes a log of three batches and returns its bytes and
// where the last batch begins.
func threeBatches(t *testing.T, path string) ([]byte, int64) {
	t.Helper()
	l := open(t, path, false)
	mustAppend(t, l, "one", "two")
	mustAppend(t, l, "three")
	last := l.end.Load()
	mustAppend(t, l, "four", "five")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data, last
}

// TestUnfinishedBatchDropped: a last batch cut short, or whose bytes do
// not check out, was never acknowledged; Open drops it, keeps the rest,
// and appends after them.
func TestUnfinishedBatchDropped(t *testing.T) {
	cases := map[string]func(data []byte, last int64) []byte{
		"cut in its header": func(data []byte, last int64) []byte { return data[:last+10] },
		"cut in its body":   func(data []byte, last int64) []byte { return data[:len(data)-3] },
		"a byte changed": func(data []byte, last int64) []byte {
			data[len(data)-2] ^= 0x40
			return data
		},
		"zeros after it": func(data []byte, last int64) []byte {
			return append(data[:last], make([]byte, 4096)...)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			data, last := threeBatches(t, path)
			if err := os.WriteFile(path, damage(data, last), 0o600); err != nil {
				t.Fatal(err)
			}
			l := open(t, path, false)
			if got := records(t, l); !equal(got, []string{"one", "two", "three"}) {
				t.Fatalf("records %q", got)
			}
			if info, err := os.Stat(path); err != nil || info.Size() != last {
				t.Fatalf("file of %v bytes, want it truncated to %d (%v)", info.Size(), last, err)
			}
			mustAppend(t, l, "four again")
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := records(t, open(t, path, false)); !equal(got, []string{"one", "two", "three", "four again"}) {
				t.Fatalf("records %q", got)
			}
		})
	}
}

// TestDamageRefused: a batch that does not check out with a whole batch
// after it is not an unfinished write. Open refuses the file and leaves
// it as it was.
func TestDamageRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	data, _ := threeBatches(t, path)
	data[len(fileHeader)+batchHeaderSize+5] ^= 0x01 // in the first batch's body
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open: %v, want it to wrap ErrDamaged", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("batch at byte %d", len(fileHeader))) {
		t.Fatalf("error %q does not name the damaged batch's place", err)
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(after, data) {
		t.Fatalf("the file changed (%v)", err)
	}
}

func TestNotALogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	data := []byte("something else entirely\n")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "not a log file") {
		t.Fatalf("Open: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("the file changed")
	}
}

func TestAppendRefusesWhatItCannotHold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l := open(t, path, false)
	mustAppend(t, l, "kept")
	if _, err := l.Append(); err == nil {
		t.Fatal("an append of no records succeeded")
	}
	if _, err := l.Append([]byte("x"), make([]byte, MaxRecord+1)); err == nil || !strings.Contains(err.Error(), "record 1") {
		t.Fatalf("an oversized record: %v", err)
	}
	if got := records(t, l); !equal(got, []string{"kept"}) || l.Len() != 1 {
		t.Fatalf("records %q, Len %d", got, l.Len())
	}
}

// TestStopsAfterAFailedWrite: once a write fails, what the file holds
// past the last acknowledged batch is unknown, so no later append writes.
func TestStopsAfterAFailedWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l := open(t, path, false)
	mustAppend(t, l, "kept")
	f := l.f
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l.f = ro // writes to it fail
	if _, err := l.Append([]byte("lost")); err == nil {
		t.Fatal("a write to a read-only file succeeded")
	}
	l.f = f
	_, err = l.Append([]byte("after"))
	if err == nil || !strings.Contains(err.Error(), "earlier failure") {
		t.Fatalf("an append after a failed write: %v", err)
	}
	_ = ro.Close()
	if got := records(t, l); !equal(got, []string{"kept"}) || l.Len() != 1 {
		t.Fatalf("records %q, Len %d", got, l.Len())
	}
}

// TestKilledKeepsWhatItAcknowledged kills a process appending from
// sixteen goroutines, which prints each append's first record's number
// once the append returns. Every printed record is in the reopened file,
// as it was appended.
func TestKilledKeepsWhatItAcknowledged(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			cmd := exec.Command(os.Args[0], "-test.run=^TestAppender$")
			cmd.Env = append(os.Environ(), "LOGFILE_APPENDER="+path, "LOGFILE_SYNC="+strconv.FormatBool(sync))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			acked := map[uint64]string{}
			lines := bufio.NewScanner(out)
			for lines.Scan() && len(acked) < 2000 {
				n, rec, ok := strings.Cut(lines.Text(), " ")
				if !ok {
					continue
				}
				first, err := strconv.ParseUint(n, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				acked[first] = rec
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if len(acked) < 2000 {
				t.Fatalf("the appender acknowledged %d appends before it stopped", len(acked))
			}
			got := records(t, open(t, path, sync))
			for first, rec := range acked {
				if first+1 >= uint64(len(got)) || got[first] != rec+".0" || got[first+1] != rec+".1" {
					t.Fatalf("acknowledged append %s at record %d is not in the reopened log of %d records", rec, first, len(got))
				}
			}
		})
	}
}

// TestAppender is the process TestKilledKeepsWhatItAcknowledged kills.
func TestAppender(t *testing.T) {
	path := os.Getenv("LOGFILE_APPENDER")
	if path == "" {
		t.Skip("run by TestKilledKeepsWhatItAcknowledged")
	}
	l, err := Open(path, Options{Sync: os.Getenv("LOGFILE_SYNC") == "true"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(30 * time.Second) // killed long before
	for g := range 16 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				rec := fmt.Sprintf("g%d-%d", g, i)
				first, err := l.Append([]byte(rec+".0"), []byte(rec+".1"))
				if err != nil {
					panic(err)
				}
				mu.Lock()
				fmt.Printf("%d %s\n", first, rec)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestReset(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l := open(t, path, sync)
			mustAppend(t, l, "one", "two")
			if err := l.Reset(); err != nil {
				t.Fatal(err)
			}
			if l.Len() != 0 || l.Size() != int64(len(fileHeader)) {
				t.Fatalf("after Reset: Len %d, Size %d", l.Len(), l.Size())
			}
			if first := mustAppend(t, l, "three"); first != 0 {
				t.Fatalf("first record after Reset numbered %d", first)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := records(t, open(t, path, sync)); !equal(got, []string{"three"}) {
				t.Fatalf("records %q", got)
			}
		})
	}
}

// TestScanFileReadsOnly: ScanFile reads what Open would keep, a torn
// batch at the end passed over and the file left as it was; it refuses a
// damaged file as Open does, and a log that does not exist, or a new
// one, holds nothing.
func TestScanFileReadsOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	data, last := threeBatches(t, path)
	scanned := func() ([]string, error) {
		var got []string
		err := ScanFile(path, func(n uint64, rec []byte) error {
			if n != uint64(len(got)) {
				return fmt.Errorf("record %d numbered %d", len(got), n)
			}
			got = append(got, string(rec))
			return nil
		})
		return got, err
	}
	if got, err := scanned(); err != nil || !equal(got, []string{"one", "two", "three", "four", "five"}) {
		t.Fatalf("records %q (%v)", got, err)
	}
	torn := data[:len(data)-3]
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := scanned(); err != nil || !equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("records of a torn log %q (%v), want those before its last batch", got, err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, torn) || int64(len(torn)) <= last {
		t.Fatalf("the torn log changed (%v)", err)
	}
	damaged := bytes.Clone(data)
	damaged[len(fileHeader)+batchHeaderSize+5] ^= 0x01
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := scanned(); !errors.Is(err, ErrDamaged) {
		t.Fatalf("ScanFile of a damaged log: %v, want it to wrap ErrDamaged", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, err := scanned(); err != nil || len(got) != 0 {
		t.Fatalf("a log that does not exist: %q (%v)", got, err)
	}
	l := open(t, path, false)
	if got, err := scanned(); err != nil || len(got) != 0 {
		t.Fatalf("a new log: %q (%v)", got, err)
	}
	_ = l.Close()
}
