package serve

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
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
// or to each of several comma-separated addresses (kernel replicas), calls
// spread round-robin over those that answer,
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
	target := addr
	if addrs := strings.Split(addr, ","); len(addrs) > 1 {
		r, err := replicas(addrs)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		target = r.Scheme() + ":///replicas"
		opts = append([]grpc.DialOption{
			grpc.WithResolvers(r),
			grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		}, opts...)
	}
	conn, err := grpc.NewClient(target, append([]grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithStaticStreamWindowSize(clientStreamWindow),
		grpc.WithStaticConnWindowSize(clientConnWindow),
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

// CheckAddrs checks an address [Dial] takes: host:port, or several,
// comma-separated (kernel replicas).
func CheckAddrs(addr string) error {
	for _, a := range strings.Split(addr, ",") {
		if _, _, err := net.SplitHostPort(strings.TrimSpace(a)); err != nil {
			return err
		}
	}
	return nil
}

// replicas resolves to a fixed list of addresses, each checked against its
// own host name (a certificate is valid for the host it serves on).
func replicas(addrs []string) (*manual.Resolver, error) {
	eps := make([]resolver.Endpoint, 0, len(addrs))
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, err
		}
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: a, ServerName: host}}})
	}
	r := manual.NewBuilderWithScheme("ambit-replicas")
	r.InitialState(resolver.State{Endpoints: eps})
	return r, nil
}
