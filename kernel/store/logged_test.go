package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/logfile"
	"github.com/ambitkernel/ambit/sdk/sqldb"
)

// decide is an update as a decision makes it: a capability's row and two
// journal entries, no statement of its own.
func decide(id string) func(tx Tx) error {
	return func(tx Tx) error {
		if err := tx.InsertCapability(batchCapability("cap-" + id)); err != nil {
			return err
		}
		if _, err := tx.Append(time.Now(), "capability", "cap-"+id, []byte("c")); err != nil {
			return err
		}
		_, err := tx.Append(time.Now(), "decision", "dec-"+id, []byte("d"))
		return err
	}
}

// openNormal opens the store at path at durability normal, with its log
// file.
func openNormal(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, DurabilityNormal)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// seen says whether the store's SQLite holds the decision's capability
// and entries, read as readers read them.
func seen(t *testing.T, s *Store, id string) bool {
	t.Helper()
	es, err := s.EntriesWithRef(context.Background(), "dec-"+id)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	err = s.View(context.Background(), func(tx Tx) error {
		_, err := tx.Capability("cap-" + id)
		found = err == nil
		if errors.Is(err, ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != (len(es) == 1) {
		t.Fatalf("the capability found %v, its decision's entries %d", found, len(es))
	}
	return found
}

// holdCopies holds every copy into SQLite until release, which a test
// defers after the store's Close (which waits for the copier); onCopy,
// when set, runs as a copy begins to wait.
func holdCopies(s *Store, onCopy func()) (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	s.copies.mu.Lock()
	s.copies.hold = func() error {
		if onCopy != nil {
			onCopy()
		}
		<-ch
		return nil
	}
	s.copies.mu.Unlock()
	return release
}

// failCopies fails every copy into SQLite from here on with err.
func failCopies(s *Store, err error) {
	s.copies.mu.Lock()
	s.copies.hold = func() error { return err }
	s.copies.mu.Unlock()
}

// TestAcknowledgedFromTheLog: a decision's update is acknowledged once its
// batch is in the log file, before SQLite holds it; a reader that begins
// after waits for the copy and sees it.
func TestAcknowledgedFromTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	defer s.Close()
	releaseCopy := holdCopies(s, nil)
	defer releaseCopy()

	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	if n := s.log.Len(); n != 1 {
		t.Fatalf("the log file holds %d batches, want the decision's", n)
	}
	read := make(chan bool)
	go func() { read <- seen(t, s, "a") }()
	select {
	case <-read:
		t.Fatal("a reader read SQLite before it held what was acknowledged")
	case <-time.After(50 * time.Millisecond):
	}
	releaseCopy()
	if !<-read {
		t.Fatal("the reader that waited did not see the decision")
	}
	if through, err := LoggedThrough(path); err != nil || through != 2 {
		t.Fatalf("LoggedThrough of a running store's log: %v %v, want a's two entries", through, err)
	}
	// The next update runs once the copy is done, and finds the row.
	err := s.Update(context.Background(), func(tx Tx) error {
		_, err := tx.Capability("cap-a")
		return err
	})
	if err != nil {
		t.Fatalf("the next update: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if through, err := LoggedThrough(path); err != nil || through != 0 {
		t.Fatalf("LoggedThrough after a clean close: %v %v", through, err)
	}
}

// TestCopiesDoNotHoldTheWriter: decisions are acknowledged from the log
// while the copier copies the one before them, and the copier then copies
// all those acknowledged meanwhile in one transaction.
func TestCopiesDoNotHoldTheWriter(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	copies := make(chan struct{}, 8)
	releaseCopy := holdCopies(s, func() { copies <- struct{}{} })
	defer releaseCopy()

	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	<-copies // the copier holds a's copy
	done := make(chan error, 1)
	go func() {
		for _, id := range []string{"b", "c"} {
			if err := s.Update(context.Background(), decide(id)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("decisions waited for the copy of the one before them")
	}
	if got := len(s.uncopied()); got != 2 {
		t.Fatalf("%d batches queued behind the held copy, want b's and c's", got)
	}
	releaseCopy()
	for _, id := range []string{"a", "b", "c"} {
		if !seen(t, s, id) {
			t.Fatalf("decision %s missing once the copies are done", id)
		}
	}
	if n := len(copies); n != 1 {
		t.Fatalf("%d copies after the held one, want b and c copied together in one", n)
	}
}

// TestGroupAcknowledgedAsOne: a group commit of several decisions is one
// record in the log file, and readers find every one of them.
// TestCopiesLingerUntilHurried: lone decisions acknowledged one after
// another wait for one copy together, and a reader that needs them
// hurries that copy rather than waiting out the linger.
func TestCopiesLingerUntilHurried(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	s.copies.mu.Lock()
	s.copies.linger = time.Hour
	s.copies.mu.Unlock()
	copies := make(chan struct{}, 8)
	release := holdCopies(s, func() { copies <- struct{}{} })
	release() // count the copies without holding them
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Update(context.Background(), decide(id)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(s.uncopied()); got != 3 {
		t.Fatalf("%d batches wait for the copy, want a's, b's and c's", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	entries, err := s.Entries(ctx, 0, 0)
	if err != nil {
		t.Fatalf("a reader waited out the copy's linger: %v", err)
	}
	if len(entries) != 6 {
		t.Fatalf("%d entries read, want a's, b's and c's two each", len(entries))
	}
	if n := len(copies); n != 1 {
		t.Fatalf("%d copies, want a, b and c copied together in one", n)
	}
	// An update that runs a statement hurries the copy before it too.
	if err := s.Update(context.Background(), decide("d")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(tx Tx) error {
			_, err := tx.Capability("cap-d")
			return err
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the update after d's: %v", err)
		}
	case <-time.After(5 * time.Second):
		s.hurryCopy() // lets the update, then Close, end
		t.Fatal("an update that runs a statement waited out the copy's linger")
	}
}

// oneCopied opens a store at durability normal whose SQLite holds one
// decision, a, copied from the log file.
func oneCopied(t *testing.T) *Store {
	t.Helper()
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	if !seen(t, s, "a") {
		t.Fatal("decision a missing once copied")
	}
	return s
}

// TestCopiesPrepareTheirInserts: a copy's inserts are prepared once it
// has given the connection back, so that the next copy does not parse
// them again.
func TestCopiesPrepareTheirInserts(t *testing.T) {
	s := oneCopied(t)
	defer s.Close()
	if s.stmts.Cached(insertShared[1]) == nil {
		t.Fatal("the copy's insert of one capability is not prepared")
	}
}

func TestGroupAcknowledgedAsOne(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	errs, _ := runUpdates(s, decide("a"), decide("b"), decide("c"))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	if n := s.log.Len(); n != 1 {
		t.Fatalf("the log file holds %d batches, want the group's one", n)
	}
	for _, id := range []string{"a", "b", "c"} {
		if !seen(t, s, id) {
			t.Fatalf("decision %s missing", id)
		}
	}
}

// TestQueueFullCommitsInSQLite: once maxQueuedRows wait for the copier, a
// decision commits in SQLite, after the copies, rather than queue more.
func TestQueueFullCommitsInSQLite(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	held := make(chan struct{}, 1)
	releaseCopy := holdCopies(s, func() {
		select {
		case held <- struct{}{}:
		default:
		}
	})
	defer releaseCopy()

	if err := s.Update(context.Background(), decide("first")); err != nil {
		t.Fatal(err)
	}
	<-held
	// A decision is two journal rows: fill the queue.
	for i := range maxQueuedRows / 2 {
		if err := s.Update(context.Background(), decide(fmt.Sprint("q", i))); err != nil {
			t.Fatal(err)
		}
	}
	logged := s.log.Len()
	done := make(chan error, 1)
	go func() { done <- s.Update(context.Background(), decide("over")) }()
	select {
	case err := <-done:
		t.Fatalf("a decision past a full queue returned (%v) while the copy was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	releaseCopy()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := s.log.Len(); n != logged {
		t.Fatalf("the log file holds %d batches, %d before the decision past the full queue: it was logged", n, logged)
	}
	for _, id := range []string{"first", "q0", fmt.Sprint("q", maxQueuedRows/2-1), "over"} {
		if !seen(t, s, id) {
			t.Fatalf("decision %s missing", id)
		}
	}
}

// TestLogEmptiedOnceCopied: a log grown past logResetSize is emptied
// before the next append, once the copier has caught up, and nothing it
// held is lost.
func TestLogEmptiedOnceCopied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	big := func(i int) func(tx Tx) error {
		return func(tx Tx) error {
			_, err := tx.Append(time.Now(), "test", fmt.Sprint("big-", i), make([]byte, 256<<10))
			return err
		}
	}
	n := 0
	for ; s.log.Size() <= logResetSize; n++ {
		if err := s.Update(context.Background(), big(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(context.Background(), big(n)); err != nil {
		t.Fatal(err)
	}
	n++
	if got := s.log.Len(); got != 1 {
		t.Fatalf("the log holds %d batches after growing past %d bytes, want the last alone", got, logResetSize)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNormal(t, path)
	defer s.Close()
	if got := s.JournalSize(); got != uint64(n) {
		t.Fatalf("the journal holds %d entries, want %d", got, n)
	}
	r, err := s.VerifyJournal(context.Background(), nil)
	if err != nil || !r.OK {
		t.Fatalf("the journal: %+v %v", r, err)
	}
}

// TestStartCopiesTheLog: a batch whose copy into SQLite failed is not
// lost. Readers fail meanwhile rather than read without it; a start copies
// it, the journal then verifies, and the log is emptied.
func TestStartCopiesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	failCopies(s, errors.New("disk gone"))
	if err := s.Update(context.Background(), decide("b")); err != nil {
		t.Fatalf("acknowledging from the log: %v", err)
	}
	if _, err := s.EntriesWithRef(context.Background(), "dec-b"); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("a reader while the copy fails: %v", err)
	}
	// A Read's statement fails too, rather than find nothing in SQLite.
	err := s.Read(context.Background(), func(tx Tx) error {
		_, err := tx.Capability("cap-b")
		return err
	})
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("a Read while the copy fails: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openNormal(t, path)
	defer s.Close()
	if !seen(t, s, "a") || !seen(t, s, "b") {
		t.Fatal("a decision acknowledged is missing after a start")
	}
	if n := s.log.Len(); n != 0 {
		t.Fatalf("the log file still holds %d batches", n)
	}
	r, err := s.VerifyJournal(context.Background(), nil)
	if err != nil || !r.OK {
		t.Fatalf("the journal after the copy: %+v %v", r, err)
	}
}

// TestFailedCopyCopiedNext: the next transaction copies what a failed copy
// left before anything of its own.
func TestFailedCopyCopiedNext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	defer s.Close()
	fail := true
	s.copies.mu.Lock()
	s.copies.hold = func() error {
		if fail {
			fail = false
			return errors.New("busy")
		}
		return nil
	}
	s.copies.mu.Unlock()
	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	// A statement of its own: the batch commits in SQLite, the copy first.
	err := s.Update(context.Background(), func(tx Tx) error {
		if _, err := tx.Capability("cap-a"); err != nil {
			return err
		}
		return decide("b")(tx)
	})
	if err != nil {
		t.Fatalf("the next update: %v", err)
	}
	if !seen(t, s, "a") || !seen(t, s, "b") {
		t.Fatal("a decision is missing")
	}
	es, err := s.Entries(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d at position %d", e.Seq, i+1)
		}
	}
}

// TestLogPastTheJournalRefused: a log whose batches do not follow the
// journal's end (entries lost with the machine at durability normal)
// fails the start, and the database is left as it was.
func TestLogPastTheJournalRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A batch whose entries begin two past the journal's end.
	f := journal.NewFrontier()
	var rows []journal.Row
	for range 4 {
		r, err := journal.Next(f, time.Now(), "decision", "dec-x", []byte("d"))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	l, err := logfile.Open(path+logSuffix, logfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(encodeLogged(&logged{rows: rows[3:]})); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()

	if _, err := Open(context.Background(), path, DurabilityNormal); err == nil || !strings.Contains(err.Error(), "lost with the machine") {
		t.Fatalf("Open: %v", err)
	}
	// Without the log, the database is as it was.
	if err := os.Remove(path + logSuffix); err != nil {
		t.Fatal(err)
	}
	s = openNormal(t, path)
	defer s.Close()
	if n := s.JournalSize(); n != 2 {
		t.Fatalf("the journal holds %d entries, want 2", n)
	}
}

// TestFullCopiesALogLeftAtNormal: a store opened at full after a run at
// normal that left acknowledged batches in its log copies them all the
// same.
func TestFullCopiesALogLeftAtNormal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	failCopies(s, errors.New("disk gone"))
	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path, DurabilityFull)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !seen(t, s, "a") {
		t.Fatal("a decision acknowledged at normal is missing at full")
	}
	if through, err := LoggedThrough(path); err != nil || through != 0 {
		t.Fatalf("the log after a start at full: %v %v", through, err)
	}
}

// TestFullCommitsInSQLite: at durability full there is no log file.
func TestFullCommitsInSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := Open(context.Background(), path, DurabilityFull)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + logSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a log file at durability full: %v", err)
	}
	if !seen(t, s, "a") {
		t.Fatal("the decision is missing")
	}
}

func TestLoggedRoundTrip(t *testing.T) {
	f := journal.NewFrontier()
	r, err := journal.Next(f, time.Unix(0, 1234567890123).UTC(), "decision", "dec-a", []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	c := batchCapability("cap-a")
	c.Note, c.Holder = "a note", "agent"
	q := Request{TaskID: "task", RequestID: "req-1", Agent: "agent", CallHash: "hash", Response: []byte{0, 1, 2}, At: time.Unix(0, 987654321).UTC()}
	b := &logged{rows: []journal.Row{r}, deferredRows: deferredRows{caps: []Capability{c}, reqs: []Request{q}}}
	entries, caps, reqs, err := decodeLogged(encodeLogged(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].TaskID != q.TaskID || reqs[0].RequestID != q.RequestID || reqs[0].Agent != q.Agent ||
		reqs[0].CallHash != q.CallHash || !bytes.Equal(reqs[0].Response, q.Response) || !reqs[0].At.Equal(q.At) {
		t.Fatalf("requests %+v, want %+v", reqs, q)
	}
	// A record of format 1, as the release before wrote, has no requests.
	old := encodeLogged(&logged{rows: []journal.Row{r}, deferredRows: deferredRows{caps: []Capability{c}}})
	old = append([]byte{1}, old[1:len(old)-1]...) // format 1, without the requests' count
	if entries, caps, reqs, err := decodeLogged(old); err != nil || len(entries) != 1 || len(caps) != 1 || len(reqs) != 0 {
		t.Fatalf("a record of format 1: %d entries, %d capabilities, %d requests (%v)", len(entries), len(caps), len(reqs), err)
	}
	if len(entries) != 1 || entries[0].seq != 1 || !entries[0].at.Equal(r.At) || entries[0].kind != "decision" || entries[0].ref != "dec-a" || entries[0].body != "body" {
		t.Fatalf("entries %+v", entries)
	}
	if len(caps) != 1 || caps[0] != c {
		t.Fatalf("capabilities %+v, want %+v", caps, c)
	}
	rec := encodeLogged(b)
	for n := range len(rec) {
		if _, _, _, err := decodeLogged(rec[:n]); err == nil {
			t.Fatalf("a record cut to %d of %d bytes decoded", n, len(rec))
		}
	}
}

// closeLog stops s's log file: every batch then commits in SQLite, as
// without one. No update may run meanwhile.
func (s *Store) closeLog() {
	if s.log != nil {
		s.stopLog()
		s.log = nil
	}
}

// copiedAll waits until SQLite holds every batch acknowledged, with no
// write after them to make a failed copy.
func copiedAll(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.copies.copied.Load() < s.copies.acked.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("copied through %d of %d after 5 s", s.copies.copied.Load(), s.copies.acked.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFailedCopyRetried: the copier makes a failed copy again by itself,
// so that readers recover with no decision after it.
func TestFailedCopyRetried(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	var tries atomic.Int32
	s.copies.mu.Lock()
	s.copies.hold = func() error {
		if tries.Add(1) <= 2 {
			return errors.New("disk busy")
		}
		return nil
	}
	s.copies.mu.Unlock()
	if err := s.Update(context.Background(), decide("a")); err != nil {
		t.Fatal(err)
	}
	copiedAll(t, s)
	if !seen(t, s, "a") {
		t.Fatal("decision a missing once its copy was made again")
	}
	if n := tries.Load(); n != 3 {
		t.Fatalf("%d tries, want two that failed and one made", n)
	}
}

// TestFailingCopiesLoseNothing: with every other copy failing, decisions
// acknowledged from the log and updates that run statements, concurrent,
// leave SQLite's journal whole and in order, every decision found, the
// failed copies made by the copier's retries and by the writer's
// transactions in turn.
func TestFailingCopiesLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	defer s.Close()
	var tries atomic.Int32
	s.copies.mu.Lock()
	s.copies.hold = func() error {
		if tries.Add(1)%2 == 1 {
			return errors.New("disk busy")
		}
		return nil
	}
	s.copies.retryAfter = 10 * time.Microsecond // retries among the writer's transactions
	s.copies.mu.Unlock()
	const workers, each = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("%d-%d", w, i)
				update := decide(id)
				if i%3 == 2 {
					// A statement of its own, reading an earlier decision's
					// capability: committed in SQLite after the copies.
					prev := fmt.Sprintf("cap-%d-%d", w, i-1)
					update = func(tx Tx) error {
						if _, err := tx.Capability(prev); err != nil {
							return fmt.Errorf("%s: %w", prev, err)
						}
						return decide(id)(tx)
					}
				}
				if err := s.Update(context.Background(), update); err != nil {
					errs <- fmt.Errorf("update %s: %w", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	copiedAll(t, s)
	es, err := s.Entries(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2*workers*each {
		t.Fatalf("%d entries, want %d", len(es), 2*workers*each)
	}
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d at position %d", e.Seq, i+1)
		}
	}
	for w := range workers {
		for i := range each {
			if id := fmt.Sprintf("%d-%d", w, i); !seen(t, s, id) {
				t.Fatalf("decision %s missing", id)
			}
		}
	}
	if tries.Load() < 4 {
		t.Fatalf("%d copies tried, want failed ones among them", tries.Load())
	}
}

// TestFailedCopyHandedBack: failed batches the writer's transaction took
// to copy and could not commit go back to the copier, which makes them
// with no write after them. The batches hold no capability, so that the
// background move of pending capabilities, whose commit would copy them
// too, has nothing to do.
func TestFailedCopyHandedBack(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	var failing atomic.Bool
	failing.Store(true)
	s.copies.mu.Lock()
	s.copies.hold = func() error {
		if failing.Load() {
			return errors.New("disk busy")
		}
		return nil
	}
	s.copies.retryAfter = 10 * time.Microsecond
	s.copies.mu.Unlock()
	err := s.Update(context.Background(), func(tx Tx) error {
		_, err := tx.Append(time.Now(), "decision", "dec-a", []byte("d"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A statement of its own takes the failed copy into its transaction,
	// which rolls back.
	refused := errors.New("refused")
	err = s.Update(context.Background(), func(tx Tx) error {
		if _, err := tx.Capability("cap-none"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("a capability never stored: %w", err)
		}
		// Long enough for the copier's retry, at most 10 ms away, to
		// find the batches taken.
		time.Sleep(50 * time.Millisecond)
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("the update: %v", err)
	}
	failing.Store(false)
	copiedAll(t, s)
	if es, err := s.EntriesWithRef(context.Background(), "dec-a"); err != nil || len(es) != 1 {
		t.Fatalf("decision a's entries %d (%v) once handed back and copied", len(es), err)
	}
}

// TestRequestsAcknowledgedFromTheLog: an answer to a request id goes to
// the log file with its decision; until SQLite holds it, updates find it
// in memory, and a second answer to the same id is refused there, as
// SQLite's unique key would refuse it; a start copies it from the log.
func TestRequestsAcknowledgedFromTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s := openNormal(t, path)
	ctx := context.Background()
	answer := func(id string) Request {
		return Request{TaskID: "task", RequestID: id, Agent: "agent", CallHash: "hash-" + id, Response: []byte("answer " + id), At: time.Now().UTC()}
	}
	answered := func(id string) func(tx Tx) error {
		return func(tx Tx) error {
			if err := decide(id)(tx); err != nil {
				return err
			}
			return tx.InsertRequest(answer(id))
		}
	}
	// lookUp finds id's answer, and is refused a second one, in an update.
	lookUp := func(id string) {
		t.Helper()
		err := s.Update(ctx, func(tx Tx) error {
			r, err := tx.Request("task", id)
			if err != nil {
				return err
			}
			if string(r.Response) != "answer "+id || r.CallHash != "hash-"+id {
				return fmt.Errorf("answer %+v", r)
			}
			if err := tx.InsertRequest(answer(id)); !errors.Is(err, ErrDuplicate) && !sqldb.IsUniqueViolation(err) {
				return fmt.Errorf("a second answer to %s: %v, want it refused", id, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	release := holdCopies(s, nil)
	if err := s.Update(ctx, answered("r1")); err != nil {
		t.Fatal(err)
	}
	if n := s.log.Len(); n != 1 {
		t.Fatalf("the log file holds %d batches, want the answered decision's", n)
	}
	lookUp("r1") // from memory: the copy is held
	if n := s.log.Len(); n != 1 {
		t.Fatalf("looking up a request id began a transaction of its own (%d batches logged)", n)
	}
	err := s.Update(ctx, func(tx Tx) error {
		if err := answered("r2")(tx); err != nil {
			return err
		}
		if err := tx.InsertRequest(answer("r2")); !errors.Is(err, ErrDuplicate) {
			return fmt.Errorf("a second answer to r2 in one update: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := s.Entries(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	lookUp("r1") // from SQLite
	lookUp("r2")
	s.copies.mu.Lock()
	left := len(s.copies.requests)
	s.copies.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d answers kept in memory once SQLite holds them", left)
	}

	// Acknowledged and never copied: a start copies it.
	failCopies(s, errors.New("disk gone"))
	if err := s.Update(ctx, answered("r3")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNormal(t, path)
	defer s.Close()
	err = s.Read(ctx, func(tx Tx) error {
		r, err := tx.Request("task", "r3")
		if err == nil && string(r.Response) != "answer r3" {
			err = fmt.Errorf("answer %+v", r)
		}
		return err
	})
	if err != nil {
		t.Fatalf("r3's answer after a start: %v", err)
	}
	lookUp("r3")
}

// TestFailingCopiesBounded: while every copy fails, the batches they
// leave count against maxQueuedRows, so memory holds no more than that;
// past it the writer's own transaction copies them.
func TestFailingCopiesBounded(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	failCopies(s, errors.New("disk busy"))
	waiting := func() (rows int) {
		for _, b := range s.uncopied() {
			rows += len(b.rows)
		}
		return rows
	}
	most := 0
	for i := range maxQueuedRows {
		if err := s.Update(context.Background(), decide(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		most = max(most, waiting())
	}
	if most > maxQueuedRows {
		t.Fatalf("%d journal rows waited in memory, more than %d", most, maxQueuedRows)
	}
	failCopies(s, nil)
	copiedAll(t, s)
	for _, i := range []int{0, maxQueuedRows / 2, maxQueuedRows - 1} {
		if !seen(t, s, fmt.Sprint(i)) {
			t.Fatalf("decision %d missing", i)
		}
	}
}

// TestJournalSizeReadable: with a log file, the journal's size is told
// (JournalSize, JournalGrown) only once a reader would find that many
// entries: a waiter woken for a size reads a head at least that large.
func TestJournalSizeReadable(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	ctx := context.Background()
	for i := range 50 {
		want := s.JournalSize() + 2
		grown := s.JournalGrown(want)
		done := make(chan error, 1)
		go func() {
			done <- s.Update(ctx, func(tx Tx) error {
				// A commit hook runs between the commit and the readers'
				// wait for the batch: a wake there reads too soon.
				tx.OnCommit(func() { time.Sleep(time.Millisecond) })
				return decide(fmt.Sprint(i))(tx)
			})
		}()
		<-grown
		head, err := s.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if head.Size < want {
			t.Fatalf("woken for %d entries, read a head of %d", want, head.Size)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopiesHurriedByRows: copyRows journal rows queued start the copy
// however long its linger.
func TestCopiesHurriedByRows(t *testing.T) {
	s := openNormal(t, filepath.Join(t.TempDir(), "k.db"))
	defer s.Close()
	s.copies.mu.Lock()
	s.copies.linger = time.Hour
	s.copies.mu.Unlock()
	// A decision is two journal rows.
	for i := range copyRows / 2 {
		if err := s.Update(context.Background(), decide(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	copiedAll(t, s)
}

// TestCopiesStoreCapabilitiesWhereTheyStay: a copy writes capabilities
// into capabilities, with their indexes, not into the pending table for
// another commit to move.
func TestCopiesStoreCapabilitiesWhereTheyStay(t *testing.T) {
	defer func(d time.Duration) { moveEvery = d }(moveEvery)
	moveEvery = time.Hour // no background move meanwhile
	s := oneCopied(t)
	defer s.Close()
	for table, want := range map[string]int{"capabilities": 1, "capabilities_pending": 0} {
		var n int
		if err := s.ro.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%d rows in %s, want %d", n, table, want)
		}
	}
}
