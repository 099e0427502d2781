package journal_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	_ "modernc.org/sqlite"
)

func openLog(t *testing.T, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, journal.Schema); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := journal.Append(ctx, tx, at.Add(time.Duration(i)*time.Second), "decision", "dec-"+string(rune('a'+i)), []byte{byte(i), 1, 2}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func verify(t *testing.T, db *sql.DB) journal.Report {
	t.Helper()
	entries, err := journal.Read(context.Background(), db, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return journal.Verify(entries)
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name      string
		tamper    string // SQL run against a five-entry log
		wantBad   int64
		wantWords string
	}{
		{name: "intact"},
		{name: "edited body", tamper: `UPDATE journal SET body = x'ff' WHERE seq = 3`, wantBad: 3, wantWords: "edited"},
		{name: "edited ref", tamper: `UPDATE journal SET ref = 'dec-z' WHERE seq = 2`, wantBad: 2, wantWords: "edited"},
		{name: "edited time", tamper: `UPDATE journal SET recorded_at = '2031-01-01T00:00:00Z' WHERE seq = 4`, wantBad: 4, wantWords: "edited"},
		{name: "removed", tamper: `DELETE FROM journal WHERE seq = 2`, wantBad: 3, wantWords: "removed"},
		{name: "inserted", tamper: `UPDATE journal SET seq = seq + 100 WHERE seq >= 3; UPDATE journal SET seq = seq - 99 WHERE seq >= 103; INSERT INTO journal SELECT 3, recorded_at, kind, 'forged', body, prev_hash, hash FROM journal WHERE seq = 2`,
			wantBad: 3, wantWords: "link"},
		{name: "reordered", tamper: `UPDATE journal SET seq = 100 WHERE seq = 2; UPDATE journal SET seq = 2 WHERE seq = 3; UPDATE journal SET seq = 3 WHERE seq = 100`,
			wantBad: 2, wantWords: "link"},
		{name: "rehashed edit", tamper: `UPDATE journal SET body = x'ff', hash = 'x' WHERE seq = 1`, wantBad: 1, wantWords: "edited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openLog(t, 5)
			if tt.tamper != "" {
				for _, stmt := range strings.Split(tt.tamper, ";") {
					if _, err := db.Exec(stmt); err != nil {
						t.Fatalf("tamper %q: %v", stmt, err)
					}
				}
			}
			r := verify(t, db)
			if tt.wantBad == 0 {
				if !r.OK || r.Entries != 5 || r.Head == "" {
					t.Fatalf("intact log: %+v", r)
				}
				return
			}
			if r.OK || r.FirstBad != tt.wantBad || !strings.Contains(r.Problem, tt.wantWords) {
				t.Errorf("got %+v, want first bad %d mentioning %q", r, tt.wantBad, tt.wantWords)
			}
		})
	}
}

func TestHeadFollowsAppends(t *testing.T) {
	db := openLog(t, 0)
	ctx := context.Background()
	if h, err := journal.Head(ctx, db); err != nil || h != "" {
		t.Fatalf("empty head = %q, %v", h, err)
	}
	tx, _ := db.BeginTx(ctx, nil)
	e, err := journal.Append(ctx, tx, time.Now(), "k", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = tx.Commit()
	if h, _ := journal.Head(ctx, db); h != e.Hash || e.Seq != 1 || e.PrevHash != "" {
		t.Errorf("head %q, entry %+v", h, e)
	}
}
