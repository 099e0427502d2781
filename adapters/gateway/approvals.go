package gateway

import (
	"strings"
	"sync"
)

// DefaultApprovalMemory bounds how many calls' approvals a gateway
// remembers; the oldest call is forgotten first.
const DefaultApprovalMemory = 1024

// Approvals remembers, per call (the call's hash: tool and canonical
// arguments), the approval a REVIEW named, so that the same call made
// again once governance approved it carries the approval id. It is safe
// for concurrent use; its zero value is not: use [NewApprovals].
type Approvals struct {
	mu     sync.Mutex
	max    int
	byCall map[string]Remembered
	order  []string // calls, oldest first
}

// Remembered is what the memory holds for one call.
type Remembered struct {
	// ID is the approval to cite, "" when there is none.
	ID string
	// UsedBy is, once an ALLOW consumed the approval, the request id of
	// that proposal: only a repeat of that very request may cite it
	// again (and gets the first answer back).
	UsedBy string
	// Round counts the approvals of this call that were forgotten
	// (rejected, cancelled, or used by another proposal). It is part of
	// the request id, so that the call proposed again after one is a
	// new proposal rather than a repeat of the answer that named it.
	Round int
}

// NewApprovals returns an empty memory of at most n calls (at least 1).
func NewApprovals(n int) *Approvals {
	return &Approvals{max: max(n, 1), byCall: map[string]Remembered{}}
}

// Lookup returns what is remembered for call.
func (a *Approvals) Lookup(call string) Remembered {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byCall[call]
}

// Remember records the approval a REVIEW of call named, replacing any
// earlier one.
func (a *Approvals) Remember(call, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.byCall[call]
	if !ok {
		if len(a.order) >= a.max {
			delete(a.byCall, a.order[0])
			a.order = a.order[1:]
		}
		a.order = append(a.order, call)
	}
	a.byCall[call] = Remembered{ID: id, Round: r.Round}
}

// Used records that the proposal with requestID obtained its capability
// with approval id.
func (a *Approvals) Used(call, id, requestID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.byCall[call]; ok && r.ID == id {
		r.UsedBy = requestID
		a.byCall[call] = r
	}
}

// Forget drops the approval of call if it is still id (a concurrent call
// may have remembered a newer one), and starts the call's next round.
func (a *Approvals) Forget(call, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.byCall[call]; ok && r.ID == id {
		a.byCall[call] = Remembered{Round: r.Round + 1}
	}
}

// StillPending reports whether the kernel's refusal of an approval that
// is not approved (ERROR_REASON_APPROVAL_NOT_APPROVED, whose message ends
// "is <STATE>") says it is still pending, so that it is worth keeping;
// rejected, cancelled or consumed approvals are not.
func StillPending(message string) bool {
	return strings.HasSuffix(strings.TrimSpace(message), " is PENDING")
}
