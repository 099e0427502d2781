package authority

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Serves maps a sidecar's identity (its certificate's name and the key id
// of its receipts) to the one agent it serves. A sidecar the map does not
// name is shared: it serves every agent.
type Serves map[string]string

// Check reports every problem of the peers at once: each sidecar Serves
// binds must be an evidence, action or verifier peer, and serve an agent.
func (p Peers) Check() error {
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(p.Serves)) {
		switch {
		case p.Serves[id] == "":
			errs = append(errs, fmt.Errorf("sidecar %q serves no agent", id))
		case !slices.Contains(p.Evidence, id) && !slices.Contains(p.Action, id) && !slices.Contains(p.Verifier, id):
			errs = append(errs, fmt.Errorf("sidecar %q is no evidence, action or verifier peer", id))
		}
	}
	return errors.Join(errs...)
}

// forTask refuses a sidecar bound to one agent that acts for a task bound
// to another: a per-agent sidecar reads, executes and reads back only for
// its own agent. A shared sidecar passes; the task's own rules still
// apply.
func (s Serves) forTask(sidecar, taskID, taskAgent string) error {
	served, ok := s[sidecar]
	if !ok || served == taskAgent {
		return nil
	}
	return refuse(ErrDenied, "TASK_OTHER_AGENT", "sidecar %q serves agent %q; task %q is bound to another agent", sidecar, served, taskID)
}

// forCapability refuses a sidecar bound to one agent that presents, or
// reports on, a capability issued to another.
func (s Serves) forCapability(sidecar, capabilityID, holder string) error {
	served, ok := s[sidecar]
	if !ok || served == holder {
		return nil
	}
	return refuse(ErrDenied, "CAPABILITY_NOT_HOLDER", "sidecar %q serves agent %q; capability %s was issued to another agent", sidecar, served, capabilityID)
}
