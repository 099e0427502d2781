package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Role is what a peer is allowed to be in an Ambit deployment. It is carried
// in the peer's certificate as the URI SAN ambit://role/<role>.
type Role string

// The roles of an Ambit deployment.
const (
	RoleKernel     Role = "kernel"
	RoleAgent      Role = "agent"
	RoleEvidence   Role = "evidence-adapter"
	RoleAction     Role = "action-adapter"
	RoleVerifier   Role = "verifier"
	RoleGovernance Role = "governance"
)

// Valid reports whether r is one of the roles defined above. The empty role
// is not valid.
func (r Role) Valid() bool {
	switch r {
	case RoleKernel, RoleAgent, RoleEvidence, RoleAction, RoleVerifier, RoleGovernance:
		return true
	}
	return false
}

// Identity is an authenticated principal: its Name (certificate CommonName)
// and its Role (certificate URI SAN).
type Identity struct {
	Name string
	Role Role
}

// DefaultIdentities returns the principals of a local Ambit deployment. There
// are two governance principals because promotions need a second one, and
// two agents so that a handoff has someone to hand off to.
func DefaultIdentities() []Identity {
	return []Identity{
		{Name: "kernel", Role: RoleKernel},
		{Name: "evidence", Role: RoleEvidence},
		{Name: "action", Role: RoleAction},
		{Name: "verifier", Role: RoleVerifier},
		{Name: "agent", Role: RoleAgent},
		{Name: "agent-b", Role: RoleAgent}, // a second agent, for handoffs
		{Name: "governance", Role: RoleGovernance},
		{Name: "policy-owner", Role: RoleGovernance},
	}
}

// Errors returned by this package, matched with errors.Is.
var (
	// ErrNoPeerIdentity means a gRPC call carries no verified peer
	// certificate from which an Identity can be taken.
	ErrNoPeerIdentity = errors.New("no peer identity")
	// ErrInvalidIdentity means a certificate does not carry a usable Ambit
	// identity (no CommonName, no role, several roles, an unknown role).
	ErrInvalidIdentity = errors.New("invalid identity")
)

const (
	roleURIScheme = "ambit"
	roleURIHost   = "role"
)

// roleURI is the URI SAN that carries role r.
func roleURI(r Role) *url.URL {
	return &url.URL{Scheme: roleURIScheme, Host: roleURIHost, Path: "/" + string(r)}
}

// IdentityFromCert returns the Ambit identity carried by c. It does not
// verify c; callers pass a certificate from a verified chain.
func IdentityFromCert(c *x509.Certificate) (Identity, error) {
	if c == nil {
		return Identity{}, fmt.Errorf("identity from certificate: nil certificate: %w", ErrInvalidIdentity)
	}
	name := c.Subject.CommonName
	if name == "" {
		return Identity{}, fmt.Errorf("identity from certificate: empty common name: %w", ErrInvalidIdentity)
	}
	var roles []Role
	for _, u := range c.URIs {
		// Other URI SANs (e.g. SPIFFE IDs) may coexist; only ours count.
		if u == nil || u.Scheme != roleURIScheme || u.Host != roleURIHost {
			continue
		}
		roles = append(roles, Role(strings.TrimPrefix(u.Path, "/")))
	}
	switch len(roles) {
	case 0:
		return Identity{}, fmt.Errorf("identity from certificate %q: no role URI: %w", name, ErrInvalidIdentity)
	case 1:
	default:
		// Two roles would make authorisation depend on which one is read.
		return Identity{}, fmt.Errorf("identity from certificate %q: %d role URIs: %w", name, len(roles), ErrInvalidIdentity)
	}
	if !roles[0].Valid() {
		return Identity{}, fmt.Errorf("identity from certificate %q: unknown role %q: %w", name, roles[0], ErrInvalidIdentity)
	}
	return Identity{Name: name, Role: roles[0]}, nil
}
