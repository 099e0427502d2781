package store

import (
	"time"

	"github.com/ambitkernel/ambit/kernel/journal"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
)

// Tx is one transaction of the grant store, as the kernel's core sees it:
// rows by what they mean, and the journal. It is the same on SQLite and
// PostgreSQL; no SQL crosses it.
type Tx interface {
	BindTask(taskID string, b Task, at time.Time) error
	Task(taskID string) (Task, error)
	TasksBoundTo(itemID string) ([]string, error)
	Tasks(after, agent, itemID string, limit int) ([]BoundTask, error)

	RecordVersion(source, key string) (string, bool, error)
	SetRecordVersion(source, key, version string, at time.Time) error
	InsertEvidence(e Evidence) (inserted bool, err error)
	NewerRead(source, key string, at time.Time) (bool, error)
	Evidence(receiptID string) (Evidence, error)
	WatchedRecords(since, now time.Time, agent string) ([]Watched, error)
	WatchedBy(since, now time.Time, agent, source, key string) (bool, error)

	InsertCapability(c Capability) error
	Capability(id string) (Capability, error)
	UpdateCapability(c Capability) error
	Capabilities(taskID string) ([]Capability, error)
	CapabilitiesAfter(taskID, after string, limit int) ([]Capability, error)
	Outstanding(record, taskID string) ([]Capability, error)
	ExpireDue(taskID string, now time.Time) error
	Due(taskID string, now time.Time) ([]Capability, error)
	Usage(taskID, currency string) (count int32, sum int64, err error)

	InsertRequest(r Request) error
	Request(taskID, requestID string) (Request, error)

	InsertApproval(a Approval) error
	UpdateApproval(a Approval) error
	Approval(id string) (Approval, error)
	ApprovalsAfter(state kernelv1.ApprovalState, after string, limit int) ([]Approval, error)
	OpenApprovals(record, taskID string) ([]Approval, error)

	// Append adds a journal entry that commits with the transaction.
	Append(at time.Time, kind, ref string, body []byte) (journal.Entry, error)
	// LogIndex is where the journal entry of kind with ref sits.
	LogIndex(kind, ref string) (uint64, error)
	// Head is the journal's tree head as the transaction sees it.
	Head() (journal.TreeHead, error)
	// OnCommit runs f once the transaction has committed, and never if it
	// rolls back.
	OnCommit(f func())
	// Changed reports whether keys stamped by [Store.Versions] were
	// written since (an exclusive store's updates only).
	Changed(keys []string, stamp []uint64) bool
}

var _ Tx = (*txn)(nil)
