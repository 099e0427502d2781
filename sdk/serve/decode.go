package serve

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// gRPC answers a request that does not decode with Internal, although it
// is the client's bytes that are wrong, and it writes that status itself,
// before any handler or interceptor could change it. So the server's codec
// does not fail: it remembers why a message did not decode, and the
// server's handlers ([Server.RegisterService]) and streams (the stream
// interceptors) answer InvalidArgument instead of running.

// decodeFailures holds, per message being decoded, its decoding error,
// from the codec's Unmarshal to the check right after it.
type decodeFailures struct{ m sync.Map }

// codec is the proto codec with decoding errors held back for check.
type codec struct {
	base     encoding.CodecV2
	failures *decodeFailures
}

var _ encoding.CodecV2 = codec{}

func newCodec(f *decodeFailures) codec {
	return codec{base: encoding.GetCodecV2(encproto.Name), failures: f}
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }
func (c codec) Name() string                           { return c.base.Name() }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if err := c.base.Unmarshal(data, v); err != nil {
		c.failures.m.Store(v, err)
	}
	return nil
}

// check returns the error of receiving m: err itself, or InvalidArgument
// when m did not decode.
func (f *decodeFailures) check(m any, err error) error {
	if err != nil {
		return err
	}
	if _, failed := f.m.LoadAndDelete(m); !failed {
		return nil
	}
	what := "the request"
	if pm, ok := m.(proto.Message); ok {
		what = string(pm.ProtoReflect().Descriptor().FullName())
	}
	return status.Errorf(codes.InvalidArgument, "request does not decode as %s", what)
}

// checkedStream is a stream whose received messages are checked.
type checkedStream struct {
	grpc.ServerStream
	failures *decodeFailures
}

func (s checkedStream) RecvMsg(m any) error {
	return s.failures.check(m, s.ServerStream.RecvMsg(m))
}
