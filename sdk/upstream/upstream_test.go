package upstream_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/upstream"
)

var errUnreachable = errors.New("kernel unreachable: nothing was done")

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		err      error
		refusal  codes.Code // OK: not a refusal
		is       error
		wantText string
	}{
		{name: "nil", ctx: context.Background(), err: nil},
		{name: "permission denied", ctx: context.Background(), err: status.Error(codes.PermissionDenied, "field salary is not granted"), refusal: codes.PermissionDenied},
		{name: "failed precondition", ctx: context.Background(), err: status.Error(codes.FailedPrecondition, "capability already used"), refusal: codes.FailedPrecondition},
		{name: "not found", ctx: context.Background(), err: status.Error(codes.NotFound, "no task"), refusal: codes.NotFound},
		{name: "invalid argument", ctx: context.Background(), err: status.Error(codes.InvalidArgument, "bad"), refusal: codes.InvalidArgument},
		{name: "unavailable fails closed", ctx: context.Background(), err: status.Error(codes.Unavailable, "connection refused"),
			is: errUnreachable, wantText: "kernel unreachable: nothing was done (kernel answered Unavailable: connection refused)"},
		{name: "deadline fails closed", ctx: context.Background(), err: status.Error(codes.DeadlineExceeded, "slow"), is: errUnreachable},
		{name: "internal fails closed", ctx: context.Background(), err: status.Error(codes.Internal, "internal error"), is: errUnreachable},
		{name: "not a status fails closed", ctx: context.Background(), err: errors.New("boom"), is: errUnreachable},
		{name: "caller's cancellation kept", ctx: canceled, err: status.Error(codes.Canceled, "context canceled"), is: context.Canceled},
		{name: "caller's cancellation beats a refusal", ctx: canceled, err: status.Error(codes.PermissionDenied, "no"), is: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := upstream.Classify(tt.ctx, tt.err, errUnreachable)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("Classify(nil) = %v", got)
				}
				return
			}
			var refusal *upstream.Refusal
			isRefusal := errors.As(got, &refusal)
			if isRefusal != (tt.refusal != codes.OK) {
				t.Fatalf("Classify = %v, refusal %v, want refusal %v", got, isRefusal, tt.refusal != codes.OK)
			}
			if isRefusal {
				st, ok := status.FromError(got)
				if !ok || st.Code() != tt.refusal || st.Message() != status.Convert(tt.err).Message() {
					t.Errorf("refusal status = %v, want the kernel's %v", st, tt.err)
				}
				return
			}
			if !errors.Is(got, tt.is) {
				t.Errorf("Classify = %v, want it to wrap %v", got, tt.is)
			}
			if tt.wantText != "" && got.Error() != tt.wantText {
				t.Errorf("Classify = %q, want %q", got, tt.wantText)
			}
		})
	}
}

func TestRefusalError(t *testing.T) {
	r := &upstream.Refusal{Status: status.New(codes.FailedPrecondition, "capability revoked")}
	if got, want := r.Error(), "kernel refused: FailedPrecondition: capability revoked"; got != want {
		t.Errorf("Error = %q, want %q", got, want)
	}
	if r.GRPCStatus() != r.Status {
		t.Error("GRPCStatus is not the kernel's status")
	}
}
