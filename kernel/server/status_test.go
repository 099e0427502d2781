package server_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/server"
	"github.com/ambitkernel/ambit/sdk/serve"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
)

func TestStatusRefusals(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"invalid", &authority.Refusal{Kind: authority.ErrInvalid, Reason: "ARGUMENTS_INVALID", Message: "call: amount: bad"}, codes.InvalidArgument},
		{"denied", &authority.Refusal{Kind: authority.ErrDenied, Reason: "FIELDS_OUTSIDE_GRANT", Message: "fields outside the grant: [salary]"}, codes.PermissionDenied},
		{"stale", &authority.Refusal{Kind: authority.ErrStale, Reason: "CAPABILITY_REVOKED", Message: "capability cap-1 was revoked"}, codes.FailedPrecondition},
		{"not found", &authority.Refusal{Kind: authority.ErrNotFound, Reason: "CAPABILITY_UNKNOWN", Message: "capability cap-9 was never issued"}, codes.NotFound},
		{"exists", &authority.Refusal{Kind: authority.ErrExists, Reason: "EFFECT_CONFLICT", Message: "capability cap-1 already has effect eff-1"}, codes.AlreadyExists},
		{"wrapped kind", &authority.Refusal{Kind: fmt.Errorf("ledger: %w", authority.ErrDenied), Reason: "LEDGER_NOT_AUTHORISED", Message: "not authorised"}, codes.PermissionDenied},
		{"unknown kind", &authority.Refusal{Kind: errors.New("something else"), Reason: "ODD", Message: "odd"}, codes.Unknown},
		{"nil kind", &authority.Refusal{Reason: "ODD", Message: "odd"}, codes.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *authority.Refusal
			if !errors.As(tt.err, &r) {
				t.Fatal("test error is not a refusal")
			}
			// A refusal is mapped the same when a caller wrapped it.
			for _, in := range []error{tt.err, fmt.Errorf("submit: %w", tt.err)} {
				out := server.Status(in)
				st, ok := status.FromError(out)
				if !ok {
					t.Fatalf("Status(%v) = %v (%T), not a gRPC status", in, out, out)
				}
				if st.Code() != tt.code || st.Message() != r.Message {
					t.Errorf("Status(%v) = %s %q, want %s %q", in, st.Code(), st.Message(), tt.code, r.Message)
				}
				want := []any{&errdetails.ErrorInfo{Reason: server.Reason(r.Reason), Domain: serve.ErrorDomain}}
				if r.Reason != "ODD" && server.Reason(r.Reason) != "ERROR_REASON_"+r.Reason {
					t.Errorf("reason %s is not declared in ErrorReason", r.Reason)
				}
				if diff := cmp.Diff(want, st.Details(), protocmp.Transform()); diff != "" {
					t.Errorf("details (-want +got):\n%s", diff)
				}
			}
		})
	}
	if serve.ErrorDomain != "ambit" {
		t.Errorf("ErrorDomain = %q, want ambit", serve.ErrorDomain)
	}
}

func TestStatusOtherErrors(t *testing.T) {
	plain := errors.New("disk on fire")
	if got := server.Status(plain); got != plain {
		t.Errorf("Status(plain) = %v, want the same error back", got)
	}
	wrapped := fmt.Errorf("commit: %w", plain)
	if got := server.Status(wrapped); got != wrapped {
		t.Errorf("Status(wrapped) = %v, want the same error back", got)
	}
	already := status.Error(codes.Unavailable, "down")
	if got := server.Status(already); got != already {
		t.Errorf("Status(status error) = %v, want the same error back", got)
	}
	if got := server.Status(nil); got != nil {
		t.Errorf("Status(nil) = %v, want nil", got)
	}
}

// TestEveryReasonIsDeclared scans the kernel's refusals: every reason it
// can send must be a value of the ErrorReason enum, so that clients in every
// language can switch on it.
func TestEveryReasonIsDeclared(t *testing.T) {
	files, err := filepath.Glob("../authority/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kernel sources: %v", err)
	}
	re := regexp.MustCompile(`refuse\(Err[A-Za-z]+, "([A-Z_]+)"`)
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			found++
			if got := server.Reason(m[1]); got != "ERROR_REASON_"+m[1] {
				t.Errorf("%s refuses with %s, which ErrorReason does not declare", f, m[1])
			}
		}
	}
	if found < 30 {
		t.Errorf("found only %d refusals: the scan is broken", found)
	}
}

// TestStorageErrorsAreUnavailable: the SQLite errors of a database that
// cannot take a write are what the shared mapping answers Unavailable
// (serve.StorageUnavailable); a constraint violation is not.
func TestStorageErrorsAreUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	rw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`INSERT INTO t VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	_, dup := rw.Exec(`INSERT INTO t VALUES ('a')`)
	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, readOnly := ro.Exec(`INSERT INTO t VALUES ('b')`)
	if readOnly == nil || dup == nil {
		t.Fatalf("writes did not fail: %v, %v", readOnly, dup)
	}
	if !serve.StorageUnavailable(fmt.Errorf("record effect: %w", readOnly)) {
		t.Errorf("read-only database error %v is not Unavailable", readOnly)
	}
	if serve.StorageUnavailable(dup) {
		t.Errorf("constraint error %v is Unavailable", dup)
	}
	// Status leaves it to the interceptor: not a refusal.
	if got := server.Status(readOnly); got != readOnly {
		t.Errorf("Status(storage error) = %v, want it unchanged for the interceptor", got)
	}
}
