package sqldb_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

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
