package serve_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/ambitkernel/ambit/sdk/pki"
)

// emptyMessage is a gRPC message of zero bytes: uncompressed, length 0.
var emptyMessage = []byte{0, 0, 0, 0, 0}

// h2Conn speaks HTTP/2 frames by hand over TLS, as a gRPC peer would, to
// see every frame the other side sends.
type h2Conn struct {
	fr *http2.Framer
}

func newH2Conn(conn net.Conn) (*h2Conn, error) {
	if err := conn.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		return nil, err
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	return &h2Conn{fr: fr}, nil
}

// headers writes a HEADERS frame of fields, name then value.
func (c *h2Conn) headers(stream uint32, end bool, fields ...string) error {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}); err != nil {
			return err
		}
	}
	return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: end})
}

// next reads frames until one that is neither a SETTINGS nor a PING
// (acknowledging those that ask for it) nor a WINDOW_UPDATE, and counts
// the PINGs the peer sent of its own.
func (c *h2Conn) next(pings *atomic.Int64) (http2.Frame, error) {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := c.fr.WriteSettingsAck(); err != nil {
					return nil, err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				pings.Add(1)
				if err := c.fr.WritePing(true, f.Data); err != nil {
					return nil, err
				}
			}
		case *http2.WindowUpdateFrame:
		default:
			return f, nil
		}
	}
}

// TestServerDoesNotPingEveryCall makes calls one at a time over a
// connection whose frames it reads itself: gRPC's bandwidth estimator,
// were it on, would ping on the request of every call.
func TestServerDoesNotPingEveryCall(t *testing.T) {
	f := newFixture(t, &testService{})
	tlsCfg, err := pki.ClientTLS(pki.IdentityDir(f.dir, "kernel"), "kernel", pki.Expect{Role: pki.RoleKernel})
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", f.addr, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c, err := newH2Conn(conn)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var pings atomic.Int64
	const calls = 3
	for i := range calls {
		stream := uint32(2*i + 1)
		if err := c.headers(stream, false, ":method", "POST", ":scheme", "https", ":path", methodEmpty, ":authority", "kernel",
			"content-type", "application/grpc", "te", "trailers"); err != nil {
			t.Fatal(err)
		}
		if err := c.fr.WriteData(stream, true, emptyMessage); err != nil {
			t.Fatal(err)
		}
		// The answer: headers, the message, and trailers that end it.
		for ended := false; !ended; {
			fr, err := c.next(&pings)
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if h, ok := fr.(*http2.MetaHeadersFrame); ok && h.StreamEnded() {
				if got := grpcStatus(h); got != "0" {
					t.Fatalf("call %d: grpc-status %q, want 0", i, got)
				}
				ended = true
			}
		}
	}
	if n := pings.Load(); n != 0 {
		t.Errorf("the server sent %d pings over %d calls, want none", n, calls)
	}
}

// TestClientDoesNotPingEveryAnswer answers calls made through Dial from a
// server that speaks HTTP/2 by hand: were the client's bandwidth
// estimator on, it would ping on the answer of every call, before its
// next call's request.
func TestClientDoesNotPingEveryAnswer(t *testing.T) {
	dir := devPKI(t)
	tlsCfg, err := pki.ServerTLS(pki.IdentityDir(dir, "kernel"), "kernel")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.NextProtos = []string{"h2"}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var pings atomic.Int64
	var closing atomic.Bool
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			conn, err := ln.Accept()
			if err != nil {
				return err
			}
			defer conn.Close()
			preface := make([]byte, len(http2.ClientPreface))
			if _, err := io.ReadFull(conn, preface); err != nil {
				return err
			}
			c, err := newH2Conn(conn)
			if err != nil {
				return err
			}
			if err := c.fr.WriteSettings(); err != nil {
				return err
			}
			for {
				fr, err := c.next(&pings)
				if err != nil {
					if closing.Load() {
						return nil // the client hung up
					}
					return err
				}
				d, ok := fr.(*http2.DataFrame)
				if !ok || !d.StreamEnded() {
					continue
				}
				if err := errors.Join(
					c.headers(d.StreamID, false, ":status", "200", "content-type", "application/grpc"),
					c.fr.WriteData(d.StreamID, false, emptyMessage),
					c.headers(d.StreamID, true, "grpc-status", "0"),
				); err != nil {
					return err
				}
			}
		}()
	}()
	conn := dial(t, dir, ln.Addr().String(), "kernel")
	client := testpb.NewTestServiceClient(conn)
	const calls = 3
	for i := range calls {
		if _, err := client.EmptyCall(callCtx(t), &testpb.Empty{}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// The pings that answers 1 and 2 would have drawn came before calls 2
	// and 3, which have been answered.
	if n := pings.Load(); n != 0 {
		t.Errorf("the client sent %d pings over %d calls, want none", n, calls)
	}
	closing.Store(true)
	_ = conn.Close()
	if err := <-served; err != nil {
		t.Errorf("the hand-made server: %v", err)
	}
}

// grpcStatus is the grpc-status of a call's trailers.
func grpcStatus(h *http2.MetaHeadersFrame) string {
	for _, f := range h.Fields {
		if f.Name == "grpc-status" {
			return f.Value
		}
	}
	return ""
}
