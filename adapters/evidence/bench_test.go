package evidence_test

import (
	"context"
	"testing"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
)

// BenchmarkReadSQL is one read of an SQLite row with raw, derived and
// quarantined fields, signed, with an in-process kernel: the adapter's own
// cost per read.
func BenchmarkReadSQL(b *testing.B) {
	dbPath, _ := database(b)
	k := &kernel{grant: &kernelv1.AuthorizeReadResponse{
		Provenance:  contractv1.Provenance_PROVENANCE_TRUSTED,
		Derived:     []*contractv1.DerivedField{derived("total_within_limit", `record.total <= 100.0`)},
		Quarantined: []string{"note"},
	}}
	f := newFixture(b, k, sqlSources(dbPath))
	req := &evidencev1.ReadRequest{
		TaskId: "t", Source: "cases_db", RecordKey: "K-1", Purpose: "p",
		Fields: []string{"total", "owner_id", "note", "total_within_limit"},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.core.Read(ctx, "agent-1", req); err != nil {
			b.Fatal(err)
		}
	}
}
