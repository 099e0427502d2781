package action_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/action"
	"github.com/ambitkernel/ambit/adapters/claims"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
)

// claimsDB writes a claims database with the demo data (C-1001 at
// claims-v42), lets edit change it, and returns it opened read-only, as
// the adapter opens it.
func claimsDB(t *testing.T, data claims.Data, edit func(ctx context.Context, db *sql.DB) error) *sql.DB {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "claims.db")
	db, err := claims.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := claims.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := claims.Seed(ctx, db, data); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		if err := edit(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := claims.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	return ro
}

// withClaims gives the core a claims database.
func withClaims(db *sql.DB) func(*action.Deps) {
	return func(d *action.Deps) { d.Claims = db }
}

func editClaim(id, total string) func(context.Context, *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error { return claims.EditClaim(ctx, db, id, total) }
}

// unversioned is a capability for refund(1740) that binds no state version.
func (k keys) unversioned(t *testing.T, key string) *receiptv1.Envelope {
	t.Helper()
	env, err := envelope.NewSigner("kernel", k.kernelPriv).Sign(&receiptv1.Capability{
		CapabilityId: "cap-" + key, TaskId: "refund-claim-1001", Action: refund(1740), Destination: "claimant",
		IdempotencyKey: key, ExpiresAt: timestamppb.New(expires), Holder: "agent",
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestExecuteRefusesStaleState: with a claims database, a first execution
// needs the refund's claim (C-1001) still at the capability's state
// version (claims-v42); a refusal happens before the kernel is asked, so
// the capability is not spent, and nothing is paid.
func TestExecuteRefusesStaleState(t *testing.T) {
	unreadable := func(t *testing.T) *sql.DB {
		// A database without the claims table: the read fails.
		path := filepath.Join(t.TempDir(), "claims.db")
		db, err := claims.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE other (a TEXT)`); err != nil {
			t.Fatal(err)
		}
		_ = db.Close()
		ro, err := claims.OpenReadOnly(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ro.Close() })
		return ro
	}
	tests := []struct {
		name        string
		db          func(t *testing.T) *sql.DB // nil: no claims database
		unversioned bool
		code        codes.Code // OK: executed
		msg         string
	}{
		{name: "claim unchanged", db: func(t *testing.T) *sql.DB { return claimsDB(t, claims.DemoData(), nil) }},
		{
			name: "claim edited since the decision",
			db: func(t *testing.T) *sql.DB {
				return claimsDB(t, claims.DemoData(), editClaim(claims.DemoClaim1001, "99.00"))
			},
			code: codes.FailedPrecondition, msg: "claim C-1001 changed since the decision (claims-v42 → claims-v43): nothing was executed",
		},
		{
			name: "claim gone",
			db:   func(t *testing.T) *sql.DB { return claimsDB(t, claims.Data{}, nil) },
			code: codes.FailedPrecondition, msg: "claim C-1001 is gone since the decision (claims-v42): nothing was executed",
		},
		{
			name: "claims database unreadable", db: unreadable,
			code: codes.Unavailable, msg: "claims database unreadable: nothing was executed",
		},
		{
			name: "capability binds no state version",
			db: func(t *testing.T) *sql.DB {
				return claimsDB(t, claims.DemoData(), editClaim(claims.DemoClaim1001, "99.00"))
			},
			unversioned: true,
		},
		{name: "no claims database: no check", db: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &kernel{}
			var opts []func(*action.Deps)
			if tt.db != nil {
				opts = append(opts, withClaims(tt.db(t)))
			}
			f := newFixture(t, k, "", nil, opts...)
			capEnv := f.keys.capability(t, "idem-1", refund(1740))
			if tt.unversioned {
				capEnv = f.keys.unversioned(t, "idem-1")
			}
			resp, err := f.h.Execute(agentCtx(), request(capEnv, "idem-1", refund(1740)))
			_, paid := f.payment(t, "idem-1")
			redeemed, _ := k.counts()
			if tt.code == codes.OK {
				if err != nil || resp == nil || !paid || redeemed != 1 {
					t.Fatalf("Execute = %v, %v; paid %v, redeemed %d; want an execution", resp, err, paid, redeemed)
				}
				return
			}
			if st := status.Convert(err); st.Code() != tt.code || st.Message() != tt.msg {
				t.Errorf("Execute = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.msg)
			}
			if resp != nil || paid || redeemed != 0 {
				t.Errorf("refused, yet response %v, paid %v, redeemed %d", resp, paid, redeemed)
			}
		})
	}
}

// TestRetryNotRechecked: once a refund is paid, a retry returns its
// receipt even though the claim has changed since: the effect already
// happened.
func TestRetryNotRechecked(t *testing.T) {
	ctx := agentCtx()
	path := filepath.Join(t.TempDir(), "claims.db")
	db, err := claims.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := claims.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := claims.Seed(ctx, db, claims.DemoData()); err != nil {
		t.Fatal(err)
	}
	ro, err := claims.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	k := &kernel{}
	f := newFixture(t, k, "", nil, withClaims(ro))
	req := request(f.keys.capability(t, "idem-1", refund(1740)), "idem-1", refund(1740))
	first, err := f.h.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// HR edits the claim after the payment.
	if err := claims.EditClaim(ctx, db, claims.DemoClaim1001, "99.00"); err != nil {
		t.Fatal(err)
	}
	again, err := f.h.Execute(ctx, req)
	if err != nil {
		t.Fatalf("retry after the claim changed = %v, want the first receipt", err)
	}
	if !again.GetRepeated() || !proto.Equal(again.GetSignedReceipt(), first.GetSignedReceipt()) {
		t.Error("retry did not return the first receipt")
	}
	// A new capability decided on the old version is refused.
	other := request(f.keys.capability(t, "idem-2", refund(1740)), "idem-2", refund(1740))
	if _, err := f.h.Execute(ctx, other); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("new execution after the claim changed = %v, want FailedPrecondition", err)
	}
}
