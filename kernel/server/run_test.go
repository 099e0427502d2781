package server

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"path/filepath"

	"github.com/ambitkernel/ambit/kernel/store"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	"github.com/ambitkernel/ambit/sdk/sqldb/pgtest"
)

// probedStore opens a kernel store in a new folder and the writable probe
// of its database, both closed when the test ends.
func probedStore(t *testing.T) (path string, probe func(context.Context) error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "kernel.db")
	st, err := store.Open(context.Background(), path, store.DurabilityFull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	probe, closeProbe, err := writableProbe(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeProbe() })
	return path, probe
}

func TestWritableProbe(t *testing.T) {
	ctx := context.Background()
	path, probe := probedStore(t)
	if err := probe(ctx); err != nil {
		t.Errorf("probe of a writable database: %v", err)
	}

	// A writer holding the lock: the database is being written, so it
	// takes writes.
	holder, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := probe(ctx); err != nil {
		t.Errorf("probe while another writer holds the lock: %v", err)
	}
	_, _ = conn.ExecContext(ctx, "ROLLBACK")
	_ = conn.Close()

	// The same file opened read-only, as on a read-only mount: the
	// probe fails (file permissions do not stop root, so the test asks
	// SQLite for a read-only connection).
	ro, closeRO, err := writableProbeDSN(path, "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer closeRO()
	if err := ro(ctx); err == nil || !strings.Contains(err.Error(), "does not take writes") {
		t.Errorf("probe of a read-only database = %v, want it refused", err)
	}
}

// TestPostgresProbe: the probe passes on a writable PostgreSQL database and
// fails, without its password, once the database takes no writes.
func TestPostgresProbe(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	probe, closeProbe, err := writableProbe(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer closeProbe()
	if err := probe(ctx); err != nil {
		t.Errorf("probe of a writable database: %v", err)
	}

	db, err := sqldb.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if _, err := db.ExecContext(ctx, `ALTER DATABASE `+name+` SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	// A new connection takes the setting.
	ro, closeRO, err := writableProbe(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRO()
	if err := ro(ctx); err == nil || !strings.Contains(err.Error(), "does not take writes") {
		t.Errorf("probe of a read-only database = %v, want it refused", err)
	}
}

// TestWritableProbeNeverKeepsTheLock: a probe whose deadline ends at any
// point, the middle of its write transaction included, leaves no
// transaction open behind it. One left open on the probe's connection
// would hold the database's write lock, and every write of the kernel
// would wait on it.
func TestWritableProbeNeverKeepsTheLock(t *testing.T) {
	ctx := context.Background()
	path, probe := probedStore(t)
	writer, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	// Deadlines from nothing to well past a whole probe, so that some end
	// between its statements.
	for i := range 400 {
		pctx, cancel := context.WithTimeout(ctx, time.Duration(i%100)*2*time.Microsecond)
		_ = probe(pctx)
		cancel()
		conn, err := writer.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil {
			_, err = conn.ExecContext(ctx, "ROLLBACK")
		}
		_ = conn.Close()
		if err != nil {
			t.Fatalf("after probe %d (deadline %s), another writer cannot write: %v", i, time.Duration(i%100)*2*time.Microsecond, err)
		}
	}
}

// TestFitting: a page keeps the entries that fit in maxPageBytes, and
// always its first.
func TestFitting(t *testing.T) {
	approval := func(kib int) *kernelv1.Approval {
		return &kernelv1.Approval{ApprovalId: "apr-1", Note: strings.Repeat("x", kib<<10)}
	}
	for _, tt := range []struct {
		name string
		kib  []int
		want int
	}{
		{"none", nil, 0},
		{"small ones", []int{1, 1, 1}, 3},
		{"three of 900 KiB fit, not four", []int{900, 900, 900, 900, 900}, 3},
		{"one alone past the bound", []int{3500, 1}, 1},
		{"up to the bound", []int{1000, 1000, 1000, 100}, 3},
	} {
		msgs := make([]*kernelv1.Approval, len(tt.kib))
		for i, k := range tt.kib {
			msgs[i] = approval(k)
		}
		if got := fitting(msgs); got != tt.want {
			t.Errorf("%s: fitting = %d, want %d", tt.name, got, tt.want)
		}
	}
}
