package sqldb_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/sdk/sqldb"
)

func TestOpenAndReadOnly(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.db")
	rw, err := sqldb.Open("sqlite:" + p)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Exec(`CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	ro, err := sqldb.OpenReadOnly(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var n int
	if err := ro.QueryRow(`SELECT a FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("read = %d, %v", n, err)
	}
	if _, err := ro.Exec(`INSERT INTO t VALUES (2)`); err == nil {
		t.Fatal("a read-only handle wrote")
	}
}

func TestRefusals(t *testing.T) {
	for _, dsn := range []string{"", "sqlite:", "mysql://u:secret@h/db"} {
		_, err := sqldb.Open(dsn)
		if !errors.Is(err, sqldb.ErrDSN) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) = %v, want ErrDSN without the password", dsn, err)
		}
	}
	for name, ok := range map[string]bool{"claims": true, "row_version": true, "a b": false, `x"; DROP`: false, "": false, "1x": false} {
		if got := sqldb.CheckIdent(name) == nil; got != ok {
			t.Errorf("CheckIdent(%q) ok = %v, want %v", name, got, ok)
		}
	}
}

// TestColumnFailsWhenUnknown pins why every query qualifies its columns:
// SQLite reads an unknown double-quoted name alone as a string literal
// (a dropped column would read as its own name), while a qualified
// unknown column is an error.
func TestColumnFailsWhenUnknown(t *testing.T) {
	db, err := sqldb.Open(filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	if got := sqldb.Column("t", "a"); got != `"t"."a"` {
		t.Errorf(`Column("t", "a") = %s`, got)
	}
	var v any
	if err := db.QueryRow(`SELECT ` + sqldb.Column("t", "a") + ` FROM t`).Scan(&v); err != nil || v != int64(7) {
		t.Errorf("known qualified column = %v, %v; want 7", v, err)
	}
	if err := db.QueryRow(`SELECT ` + sqldb.Ident("zz") + ` FROM t`).Scan(&v); err != nil || v != "zz" {
		t.Fatalf("unknown unqualified column = %v, %v; SQLite no longer reads it as a string: revisit Column's comment", v, err)
	}
	for _, q := range []string{
		`SELECT ` + sqldb.Column("t", "zz") + ` FROM t`,
		`SELECT +` + sqldb.Column("t", "zz") + ` FROM t`,
		`SELECT ` + sqldb.Column("t", "a") + ` FROM t WHERE ` + sqldb.Column("t", "zz") + ` = 1`,
	} {
		err := db.QueryRow(q).Scan(&v)
		if err == nil || !strings.Contains(err.Error(), "no such column") {
			t.Errorf("%s = %v, %v; want no such column", q, v, err)
		}
	}
}

func TestTableColumns(t *testing.T) {
	db, err := sqldb.Open(filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (a INTEGER, Bee TEXT)`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cols, err := sqldb.TableColumns(ctx, db, "t")
	if diff := cmp.Diff([]string{"a", "Bee"}, cols); diff != "" || err != nil {
		t.Errorf("TableColumns(t) = %v (-want +got):\n%s", err, diff)
	}
	for name, want := range map[string]bool{"a": true, "A": true, "bee": true, "Bee": true, "c": false, "": false} {
		if got := sqldb.HasColumn(cols, name); got != want {
			t.Errorf("HasColumn(%q) = %v, want %v", name, got, want)
		}
	}
	if cols, err := sqldb.TableColumns(ctx, db, "missing"); len(cols) != 0 || err != nil {
		t.Errorf("TableColumns(missing) = %v, %v; want none", cols, err)
	}
}

// TestText pins the text both adapters give a state version: the
// evidence adapter in receipts, the action adapter when it re-reads it.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
		ok   bool
	}{
		{v: "records-v42", want: "records-v42", ok: true},
		{v: int64(42), want: "42", ok: true},
		{v: uint64(42), want: "42", ok: true},
		{v: 42.0, want: "42", ok: true},
		{v: true, want: "true", ok: true},
		{v: 4.5},
		{v: "", want: "", ok: true},
		{v: nil},
		{v: []byte("x")},
		{v: math.Inf(1)},
	} {
		got, ok := sqldb.Text(tc.v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("sqldb.Text(%#v) = %q, %v; want %q, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
