package claims_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/adapters/claims"
)

// seeded returns a migrated, seeded demo database and its path.
func seeded(t *testing.T) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "claims.db")
	db, err := claims.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	if err := claims.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := claims.Seed(ctx, db, claims.DemoData()); err != nil {
		t.Fatal(err)
	}
	return db, path
}

func connector(t *testing.T, db *sql.DB, k claims.Kind) *claims.Table {
	t.Helper()
	c, err := claims.NewConnector(db, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRead(t *testing.T) {
	db, _ := seeded(t)
	tests := []struct {
		name    string
		kind    claims.Kind
		key     string
		fields  []string
		want    claims.Record
		wantErr error
		errText string
	}{
		{
			name:   "projection returns only the requested claim fields",
			kind:   claims.KindClaims,
			key:    claims.DemoClaim1001,
			fields: []string{"receipt_total", "receipt_date"},
			want: claims.Record{
				Values:       map[string]string{"receipt_total": "17.40", "receipt_date": "2026-03-02"},
				StateVersion: claims.DemoClaimsStateVersion,
				Subject:      claims.DemoClaimant,
			},
		},
		{
			name:   "subject is returned without being requested",
			kind:   claims.KindClaims,
			key:    claims.DemoClaimOther,
			fields: []string{"cost_centre"},
			want: claims.Record{
				Values:       map[string]string{"cost_centre": "CC-220 Finance"},
				StateVersion: claims.DemoClaimsStateVersion,
				Subject:      claims.DemoOtherClaimant,
			},
		},
		{
			name:   "receipt text",
			kind:   claims.KindReceipts,
			key:    claims.DemoReceipt2002,
			fields: []string{"receipt_text", "claim_id"},
			want: claims.Record{
				Values:       map[string]string{"receipt_text": claims.DemoInjection, "claim_id": claims.DemoClaim1002},
				StateVersion: claims.DemoReceiptsStateVersion,
				Subject:      claims.DemoClaimant,
			},
		},
		{
			name:    "unknown field is refused and named",
			kind:    claims.KindClaims,
			key:     claims.DemoClaim1001,
			fields:  []string{"receipt_total", "shoe_size"},
			wantErr: claims.ErrUnknownField,
			errText: `"shoe_size"`,
		},
		{
			name:    "row_version is not a readable field",
			kind:    claims.KindClaims,
			key:     claims.DemoClaim1001,
			fields:  []string{"row_version"},
			wantErr: claims.ErrUnknownField,
		},
		{
			name:    "a claims column is unknown in receipts",
			kind:    claims.KindReceipts,
			key:     claims.DemoReceipt2001,
			fields:  []string{"salary"},
			wantErr: claims.ErrUnknownField,
		},
		{
			name:    "sql in a field name is an unknown field",
			kind:    claims.KindClaims,
			key:     claims.DemoClaim1001,
			fields:  []string{`receipt_total" FROM claims; --`, "*"},
			wantErr: claims.ErrUnknownField,
			errText: `"*"`,
		},
		{
			name:    "missing key",
			kind:    claims.KindClaims,
			key:     "C-0000",
			fields:  []string{"receipt_total"},
			wantErr: claims.ErrNotFound,
		},
		{
			name:    "sql in a key finds nothing",
			kind:    claims.KindClaims,
			key:     "' OR '1'='1",
			fields:  []string{"receipt_total"},
			wantErr: claims.ErrNotFound,
		},
		{
			name:    "no fields",
			kind:    claims.KindClaims,
			key:     claims.DemoClaim1001,
			wantErr: claims.ErrNoFields,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := connector(t, db, tt.kind).Read(context.Background(), tt.key, tt.fields)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Read error = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("Read error %q does not contain %q", err, tt.errText)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEditClaimBumpsVersion(t *testing.T) {
	db, _ := seeded(t)
	ctx := context.Background()
	c := connector(t, db, claims.KindClaims)
	if err := claims.EditClaim(ctx, db, claims.DemoClaim1001, "17.41"); err != nil {
		t.Fatal(err)
	}
	got, err := c.Read(ctx, claims.DemoClaim1001, []string{"receipt_total"})
	if err != nil {
		t.Fatal(err)
	}
	want := claims.Record{
		Values:       map[string]string{"receipt_total": "17.41"},
		StateVersion: "claims-v43",
		Subject:      claims.DemoClaimant,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after edit (-want +got):\n%s", diff)
	}
	// Other claims keep their version.
	other, err := c.Read(ctx, claims.DemoClaim1003, []string{"receipt_total"})
	if err != nil {
		t.Fatal(err)
	}
	if other.StateVersion != claims.DemoClaimsStateVersion {
		t.Errorf("C-1003 state version = %s, want unchanged", other.StateVersion)
	}
	if err := claims.EditClaim(ctx, db, "C-0000", "1.00"); !errors.Is(err, claims.ErrNotFound) {
		t.Errorf("EditClaim(missing) = %v, want ErrNotFound", err)
	}
}

func TestSeedIsIdempotentAndKeepsEdits(t *testing.T) {
	db, _ := seeded(t)
	ctx := context.Background()
	if err := claims.EditClaim(ctx, db, claims.DemoClaim1001, "17.41"); err != nil {
		t.Fatal(err)
	}
	if err := claims.Seed(ctx, db, claims.DemoData()); err != nil {
		t.Fatal(err)
	}
	got, err := connector(t, db, claims.KindClaims).Read(ctx, claims.DemoClaim1001, []string{"receipt_total"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Values["receipt_total"] != "17.41" || got.StateVersion != "claims-v43" {
		t.Errorf("after reseed: %+v, want the edit kept", got)
	}
}

func TestReadOnlyCannotWrite(t *testing.T) {
	_, path := seeded(t)
	ro, err := claims.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	ctx := context.Background()
	got, err := connector(t, ro, claims.KindClaims).Read(ctx, claims.DemoClaim1001, []string{"receipt_total"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Values["receipt_total"] != claims.DemoTotal1001 {
		t.Errorf("read-only read = %v", got.Values)
	}
	if err := claims.EditClaim(ctx, ro, claims.DemoClaim1001, "0.01"); err == nil {
		t.Error("EditClaim through a read-only handle succeeded")
	}
}

func TestOpenReadOnlyMissingFileFailsCheck(t *testing.T) {
	ro, err := claims.OpenReadOnly(filepath.Join(t.TempDir(), "missing.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	c, err := claims.NewConnector(ro, claims.KindClaims)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(context.Background()); err == nil {
		t.Error("Check on a missing database succeeded")
	}
}

func TestDemoDataIsSensitiveEverywhere(t *testing.T) {
	d := claims.DemoData()
	if len(d.Claims) != 5 {
		t.Fatalf("%d demo claims, want 5", len(d.Claims))
	}
	for _, c := range d.Claims {
		for name, v := range map[string]string{
			"salary": c.Salary, "medical_notes": c.MedicalNotes,
			"bank_account": c.BankAccount, "disciplinary_notes": c.DisciplinaryNotes,
		} {
			if v == "" {
				t.Errorf("claim %s: %s empty", c.ClaimID, name)
			}
		}
		if c.RowVersion != claims.DemoRowVersion {
			t.Errorf("claim %s: row_version %d", c.ClaimID, c.RowVersion)
		}
	}
	if !strings.Contains(claims.DemoInjection, "IGNORE ALL PREVIOUS RULES") {
		t.Error("demo receipt R-2002 carries no injection")
	}
}

func TestNewConnectorUnknownKind(t *testing.T) {
	db, _ := seeded(t)
	if _, err := claims.NewConnector(db, "payroll"); err == nil {
		t.Error("NewConnector(payroll) succeeded")
	}
	if claims.Kind("payroll").Valid() || !claims.KindReceipts.Valid() {
		t.Error("Kind.Valid is wrong")
	}
}

func TestVersion(t *testing.T) {
	db, path := seeded(t)
	ctx := context.Background()
	ro, err := claims.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := claims.EditClaim(ctx, db, claims.DemoClaim1004, "82.00"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		kind    claims.Kind
		key     string
		want    string
		wantErr error
	}{
		{name: "unchanged claim", kind: claims.KindClaims, key: claims.DemoClaim1001, want: claims.DemoClaimsStateVersion},
		{name: "edited claim", kind: claims.KindClaims, key: claims.DemoClaim1004, want: "claims-v43"},
		{name: "receipt", kind: claims.KindReceipts, key: claims.DemoReceipt2002, want: claims.DemoReceiptsStateVersion},
		{name: "missing claim", kind: claims.KindClaims, key: "C-9999", wantErr: claims.ErrNotFound},
		{name: "unknown kind", kind: "payroll", key: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claims.Version(ctx, ro, tt.kind, tt.key)
			switch {
			case tt.want != "":
				if err != nil || got != tt.want {
					t.Errorf("Version = %q, %v; want %q", got, err, tt.want)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.key) {
					t.Errorf("Version = %q, %v; want %v naming %q", got, err, tt.wantErr, tt.key)
				}
			case err == nil:
				t.Errorf("Version = %q, want an error", got)
			}
		})
	}
}
