package sqldb

import (
	"context"
	"path/filepath"
	"testing"
)

// TestPrepared: statements run as they would unprepared, in and out of a
// transaction (a rolled-back write is gone), each query text prepared
// once; a query that cannot be prepared fails as it would unprepared.
func TestPrepared(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	p := NewPrepared(db)
	defer p.Close()
	const insert, get = `INSERT INTO kv (k, v) VALUES (?, ?)`, `SELECT v FROM kv WHERE k = ?`
	for i, k := range []string{"a", "b", "c"} {
		if _, err := p.ExecContext(ctx, insert, k, i); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	if err := p.QueryRowContext(ctx, get, "c").Scan(&v); err != nil || v != 2 {
		t.Errorf("read c = %d, %v; want 2", v, err)
	}
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.In(tx).ExecContext(ctx, insert, "d", 3); err != nil {
			t.Fatal(err)
		}
		if err := p.In(tx).QueryRowContext(ctx, get, "d").Scan(&v); err != nil || v != 3 {
			t.Errorf("read d within the transaction = %d, %v; want 3", v, err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		rows, err := p.QueryContext(ctx, get, "d")
		if err != nil {
			t.Fatal(err)
		}
		found := rows.Next()
		rows.Close()
		if found != commit {
			t.Errorf("d after the transaction (committed %v): found %v", commit, found)
		}
	}
	n := 0
	p.m.Range(func(any, any) bool { n++; return true })
	if n != 2 {
		t.Errorf("%d statements prepared, want 2 (one per query text)", n)
	}
	if _, err := p.ExecContext(ctx, `INSERT INTO missing VALUES (?)`, 1); err == nil {
		t.Error("a statement on a missing table ran")
	}
	// A database whose one connection a transaction holds runs new text
	// unprepared, and prepares it afterwards.
	const count = `SELECT COUNT(*) FROM kv`
	if p.Cached(count) != nil {
		t.Error("a query never run is cached")
	}
	p.PrepareAll(ctx, []string{count, `SELECT * FROM missing`})
	if p.Cached(count) == nil {
		t.Error("PrepareAll left a query unprepared")
	}
	for n, want := range map[int]string{0: "", 1: "?", 3: "?, ?, ?"} {
		if got := Placeholders(n); got != want {
			t.Errorf("Placeholders(%d) = %q, want %q", n, got, want)
		}
	}
}
