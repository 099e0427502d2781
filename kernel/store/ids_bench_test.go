package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ambitkernel/ambit/kernel/store"
	"github.com/ambitkernel/ambit/sdk/ident"
)

// randomID is how the sidecars made the part of their identifiers after
// the prefix before ident.New: 16 random bytes.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// BenchmarkEvidenceIDs records evidence receipts one to a commit, as the
// loop does at one in flight: the evidence row and its journal entry,
// whose ref the journal indexes. The store already holds a history of
// receipts issued under random identifiers. The new receipts' identifiers
// are random (a random page of both indexes each) or begin with the time
// (ident.New, appended at the indexes' end), as the sidecars issue them.
func BenchmarkEvidenceIDs(b *testing.B) {
	const history, perTx = 100_000, 5000
	body := bytes.Repeat([]byte("evidence receipt envelope "), 20)
	ctx := context.Background()
	record := func(tx store.Tx, id string) error {
		e := store.Evidence{ReceiptID: "ev-" + id, TaskID: "task-1", EnvelopeHash: "aa", Source: "claims_db",
			RecordKey: "C-1001", StateVersion: "claims-v42", ReadAt: t0}
		if _, err := tx.InsertEvidence(e); err != nil {
			return err
		}
		_, err := tx.Append(t0, "evidence", e.ReceiptID, body)
		return err
	}
	for _, c := range []struct {
		name string
		id   func() string
	}{
		{"random", randomID},
		{"time-ordered", func() string { return ident.New(10) }},
	} {
		b.Run(fmt.Sprintf("history=%d/%s", history, c.name), func(b *testing.B) {
			s, err := store.Open(ctx, filepath.Join(b.TempDir(), "k.db"), store.DurabilityNormal)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			for lo := 0; lo < history; lo += perTx {
				err := s.Update(ctx, func(tx store.Tx) error {
					for range perTx {
						if err := record(tx, randomID()); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if err := s.Update(ctx, func(tx store.Tx) error { return record(tx, c.id()) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
