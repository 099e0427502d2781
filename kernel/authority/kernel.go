package authority

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/memo"
	"github.com/ambitkernel/ambit/kernel/store"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/ident"
	"go.uber.org/zap"
)

// Peers names the signing keys the kernel trusts for each adapter role. A
// receipt is accepted only from a key of the matching role.
type Peers struct {
	Evidence []string
	Action   []string
	Verifier []string
	// Serves binds per-agent sidecars to their agent; a peer it does not
	// name serves every agent.
	Serves Serves
}

// Store is the kernel's database as its core uses it: transactions over
// the grant store, and the journal. [store.Store] is it, on SQLite or on a
// PostgreSQL database that kernel replicas share.
type Store interface {
	// Update runs fn in a write transaction, group-committed with others;
	// UpdateAlone in a commit of its own, its OnCommit hooks run before any
	// later update starts.
	Update(ctx context.Context, fn func(tx store.Tx) error) error
	UpdateAlone(ctx context.Context, fn func(tx store.Tx) error) error
	// View runs fn in a transaction that is rolled back.
	View(ctx context.Context, fn func(tx store.Tx) error) error
	journal.Reader
	// The ledger starts from its snapshots and reads its journal entries
	// by page and by item.
	snapshotStore
	Head(ctx context.Context) (journal.TreeHead, error)
	VerifyJournal(ctx context.Context, trusted []journal.TreeHead) (journal.Report, error)
	// Follow receives the journal entries other replicas commit.
	Follow(fn func(ctx context.Context, entries []journal.Entry) error)

	// An exclusive store (no other process writes it) lets decisions
	// read outside the writer: Read on a connection of its own, with
	// Versions stamping what may change under them, and Usage and
	// CommittedHead as memory holds them since the last commit.
	Exclusive() bool
	Read(ctx context.Context, fn func(tx store.Tx) error) error
	Versions(keys []string) []uint64
	Usage(ctx context.Context, taskID, currency string) (count int32, sum int64, err error)
	CommittedHead() journal.TreeHead
}

var _ Store = (*store.Store)(nil)

// Options configure a Kernel.
type Options struct {
	Store  Store
	Signer *envelope.Signer
	// Keys holds the public keys of every peer named in Peers and the
	// kernel's own.
	Keys  envelope.Keyring
	Peers Peers
	// Authorities decide who may promote at each ledger scope.
	Authorities canon.Authorities
	// CapabilityTTL bounds a capability's life (default 5 minutes).
	CapabilityTTL time.Duration
	Clock         func() time.Time
	Log           *zap.Logger
	// NewID returns a fresh identifier with the prefix; random by default.
	NewID func(prefix string) string
	// SnapshotEvery is how many ledger transitions are folded between two
	// snapshots of the ledger written in the background: 0 means
	// DefaultSnapshotEvery, a negative number none (Snapshot and Close
	// still write one).
	SnapshotEvery int
}

// Kernel is the authority kernel's core. It is safe for concurrent use.
type Kernel struct {
	store  Store
	signer *envelope.Signer
	self   envelope.Keyring
	ev     envelope.Keyring
	act    envelope.Keyring
	ver    envelope.Keyring
	serves Serves
	auth   canon.Authorities
	ttl    time.Duration
	now    func() time.Time
	log    *zap.Logger
	newID  func(string) string
	ledger *ledger
	// compile keeps the contracts decisions used last, by content hash;
	// compiler shares their tools' and derived fields' compiled forms.
	compile  *memo.Map[*compiled]
	compiler *contract.Compiler
	// requests limits boundary-change requests per agent.
	requests window
	// reserved is what decisions in flight may use up.
	reserved reservations
	// signed are the capabilities this kernel signed, for redemption.
	signed signedCapabilities
	// recorded are the evidence receipts this kernel recorded last, by
	// envelope digest, decoded for the proposals that cite them.
	recorded *memo.Map[recordedEvidence]
}

// New builds a kernel over an opened store and loads the authority ledger
// from its journal: from the newest snapshot that matches the journal and
// the transitions after it, else by replaying the whole journal. Close
// stops it.
func New(ctx context.Context, o Options) (*Kernel, error) {
	if o.Store == nil || o.Signer == nil || o.Log == nil {
		return nil, errors.New("authority: store, signer and log are required")
	}
	pick := func(ids []string) (envelope.Keyring, error) {
		ring := envelope.Keyring{}
		for _, id := range ids {
			pub, ok := o.Keys[id]
			if !ok {
				return nil, fmt.Errorf("authority: no public key for peer %q", id)
			}
			ring[id] = pub
		}
		return ring, nil
	}
	k := &Kernel{
		store:    o.Store,
		signer:   o.Signer,
		auth:     o.Authorities,
		ttl:      o.CapabilityTTL,
		now:      o.Clock,
		log:      o.Log,
		newID:    o.NewID,
		signed:   signedCapabilities{digest: memo.New[string](maxIssued)},
		recorded: memo.New[recordedEvidence](maxRecorded),
		compile:  memo.New[*compiled](maxCompiled),
		compiler: contract.NewCompiler(),
	}
	var err error
	if k.self, err = pick([]string{o.Signer.KeyID()}); err != nil {
		return nil, err
	}
	if k.ev, err = pick(o.Peers.Evidence); err != nil {
		return nil, err
	}
	if k.act, err = pick(o.Peers.Action); err != nil {
		return nil, err
	}
	if k.ver, err = pick(o.Peers.Verifier); err != nil {
		return nil, err
	}
	if err := o.Peers.Check(); err != nil {
		return nil, fmt.Errorf("authority: peers: %w", err)
	}
	k.serves = o.Peers.Serves
	if k.ttl <= 0 {
		k.ttl = 5 * time.Minute
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.newID == nil {
		k.newID = randomID
	}
	every := o.SnapshotEvery
	if every == 0 {
		every = DefaultSnapshotEvery
	}
	if k.ledger, err = newLedger(ctx, o.Store, o.Authorities, o.Log, k.clock, every); err != nil {
		return nil, err
	}
	// Kernel replicas sharing the store each follow the others' ledger
	// transitions.
	o.Store.Follow(k.ledger.follow)
	return k, nil
}

// randomID is the prefix then 24 hex digits: the time and 6 random bytes
// ([ident.New]).
func randomID(prefix string) string { return prefix + ident.New(6) }

// clock returns the current instant in UTC, truncated to microseconds so
// that times survive the round trip through the store unchanged.
func (k *Kernel) clock() time.Time { return k.now().UTC().Truncate(time.Microsecond) }
