package serve

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
)

// Client keepalive. The interval stays above the servers' enforcement
// minimum (keepaliveMinTime) so that servers never close the connection for
// pinging too often.
const (
	clientKeepaliveTime    = 30 * time.Second
	clientKeepaliveTimeout = 10 * time.Second
)

// Dial returns a client connection to addr (host:port) using tlsCfg (which
// should come from [pki.ClientTLS], naming the role the server must have),
// with opts added (interceptors, stats handlers). It does not block or
// connect: the connection is made by the first call, and calls fail fast
// while the server is unreachable. ctx is only checked for cancellation;
// close the connection to release it.
func Dial(ctx context.Context, addr string, tlsCfg *tls.Config, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if tlsCfg == nil {
		return nil, fmt.Errorf("dial %s: nil TLS config", addr)
	}
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                clientKeepaliveTime,
			Timeout:             clientKeepaliveTimeout,
			PermitWithoutStream: true,
		}),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}
