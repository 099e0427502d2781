package pki

import (
	"context"
	"fmt"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// PeerFromContext returns the identity of the peer of the gRPC call whose
// context is ctx. Only the leaf of a chain verified during the TLS handshake
// is used. Every error wraps [ErrNoPeerIdentity]; one caused by a certificate
// without a usable identity also wraps [ErrInvalidIdentity].
func PeerFromContext(ctx context.Context) (Identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Identity{}, fmt.Errorf("peer from context: no peer: %w", ErrNoPeerIdentity)
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return Identity{}, fmt.Errorf("peer from context: connection is not TLS: %w", ErrNoPeerIdentity)
	}
	chains := info.State.VerifiedChains
	if len(chains) == 0 || len(chains[0]) == 0 {
		return Identity{}, fmt.Errorf("peer from context: no verified certificate: %w", ErrNoPeerIdentity)
	}
	id, err := IdentityFromCert(chains[0][0])
	if err != nil {
		return Identity{}, fmt.Errorf("peer from context: %w: %w", ErrNoPeerIdentity, err)
	}
	return id, nil
}
