package serve

import (
	"context"
	"errors"

	"buf.build/go/protovalidate"
	errorv1 "github.com/ambitkernel/ambit/proto/gen/ambit/error/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// validator checks every request against the limits its .proto file
// declares (buf.validate annotations), before any handler runs: an
// oversized list or string is refused at the edge, the same way for
// clients in every language.
type validator struct {
	v protovalidate.Validator
}

func newValidator() (*validator, error) {
	v, err := protovalidate.New()
	if err != nil {
		return nil, err
	}
	return &validator{v: v}, nil
}

// check answers InvalidArgument naming each violated field, with the
// violations and an ErrorInfo (ERROR_REASON_INVALID_REQUEST) as details.
func (val *validator) check(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	err := val.v.Validate(m)
	if err == nil {
		return nil
	}
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) {
		return err // a rule that does not compile: a defect, logged as internal
	}
	st := status.Convert(Error(codes.InvalidArgument, errorv1.ErrorReason_ERROR_REASON_INVALID_REQUEST, "invalid request: "+ve.Error()))
	if withDetails, derr := st.WithDetails(ve.ToProto()); derr == nil {
		st = withDetails
	}
	return st.Err()
}

func (val *validator) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := val.check(req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (val *validator) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &validatedStream{ServerStream: ss, val: val})
}

type validatedStream struct {
	grpc.ServerStream
	val *validator
}

func (s *validatedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.val.check(m)
}
