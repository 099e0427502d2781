package serve

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ambitkernel/ambit/sdk/pki"
)

// Policy maps a full gRPC method name ("/ambit.agent.v1.AgentService/SubmitProposal")
// to the roles allowed to call it. A method that is not listed is denied to
// every role, so a new RPC is closed until someone decides who may call it.
// The gRPC health and reflection services are open to every authenticated
// peer and need no entry.
type Policy map[string][]pki.Role

// isOpen reports whether method belongs to a service any authenticated
// peer may call: gRPC health and reflection. Only a canonical
// "/service/method" path matches.
func isOpen(method string) bool {
	rest, ok := strings.CutPrefix(method, "/")
	if !ok {
		return false
	}
	service, name, ok := strings.Cut(rest, "/")
	if !ok || name == "" {
		return false
	}
	switch service {
	case "grpc.health.v1.Health",
		"grpc.reflection.v1.ServerReflection",
		"grpc.reflection.v1alpha.ServerReflection":
		return true
	}
	return false
}

// authorize decides whether id may call method. It is a pure function of its
// inputs; the returned error is a gRPC status (PermissionDenied) that names
// the roles required and nothing else.
func (p Policy) authorize(method string, id pki.Identity) error {
	if isOpen(method) {
		return nil
	}
	roles, ok := p[method]
	if !ok || len(roles) == 0 {
		return status.Error(codes.PermissionDenied, "method is not open to any role")
	}
	if slices.Contains(roles, id.Role) {
		return nil
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return status.Errorf(codes.PermissionDenied, "method requires role %s", strings.Join(names, " or "))
}

// Validate reports every malformed entry of p: a method name not of the form
// "/package.Service/Method", no roles, or an unknown role.
func (p Policy) Validate() error {
	var errs []error
	// Sorted so that the report is stable; every entry is checked so that
	// one run shows all mistakes.
	for _, method := range sortedKeys(p) {
		if !validMethodName(method) {
			errs = append(errs, fmt.Errorf("policy: method %q: want /package.Service/Method", method))
		}
		roles := p[method]
		if len(roles) == 0 {
			errs = append(errs, fmt.Errorf("policy: method %q: no roles (leave it out to deny it)", method))
		}
		for _, r := range roles {
			if !r.Valid() {
				errs = append(errs, fmt.Errorf("policy: method %q: unknown role %q", method, r))
			}
		}
	}
	return errors.Join(errs...)
}

func validMethodName(m string) bool {
	rest, ok := strings.CutPrefix(m, "/")
	if !ok {
		return false
	}
	service, method, ok := strings.Cut(rest, "/")
	return ok && service != "" && method != "" && !strings.Contains(method, "/")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
