package gateway

import (
	"strings"
	"sync"
)

// DefaultApprovalMemory bounds how many calls' approvals a gateway
// remembers; the oldest is forgotten first.
const DefaultApprovalMemory = 1024

// Approvals remembers, per call (the call's hash: tool and canonical
// arguments), the approval a REVIEW named, so that the same call made
// again once governance approved it carries the approval id. It is safe
// for concurrent use; its zero value is not: use [NewApprovals].
type Approvals struct {
	mu     sync.Mutex
	max    int
	byCall map[string]approval
	order  []string // calls, oldest first
}

// approval is one remembered approval. Once an ALLOW consumed it, usedBy
// is the request id of that proposal: only a repeat of that very request
// may cite it again (and gets the first answer back).
type approval struct {
	id, usedBy string
}

// NewApprovals returns an empty memory of at most n calls (at least 1).
func NewApprovals(n int) *Approvals {
	return &Approvals{max: max(n, 1), byCall: map[string]approval{}}
}

// Lookup returns the approval remembered for call, and the request id
// that consumed it ("" while it has not been used).
func (a *Approvals) Lookup(call string) (id, usedBy string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.byCall[call]
	return r.id, r.usedBy
}

// Remember records the approval a REVIEW of call named, replacing any
// earlier one.
func (a *Approvals) Remember(call, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byCall[call]; !ok {
		if len(a.order) >= a.max {
			delete(a.byCall, a.order[0])
			a.order = a.order[1:]
		}
		a.order = append(a.order, call)
	}
	a.byCall[call] = approval{id: id}
}

// Used records that the proposal with requestID obtained its capability
// with approval id.
func (a *Approvals) Used(call, id, requestID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.byCall[call]; ok && r.id == id {
		a.byCall[call] = approval{id: id, usedBy: requestID}
	}
}

// Forget drops the approval of call if it is still id (a concurrent call
// may have remembered a newer one).
func (a *Approvals) Forget(call, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.byCall[call]; !ok || r.id != id {
		return
	}
	delete(a.byCall, call)
	for i, c := range a.order {
		if c == call {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
}

// StillPending reports whether the kernel's refusal of an approval that
// is not approved (ERROR_REASON_APPROVAL_NOT_APPROVED, whose message ends
// "is <STATE>") says it is still pending, so that it is worth keeping;
// rejected, cancelled or consumed approvals are not.
func StillPending(message string) bool {
	return strings.HasSuffix(strings.TrimSpace(message), " is PENDING")
}
