package authority_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/ambitkernel/ambit/kernel/store/storetest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/kernel/authority"
	"github.com/ambitkernel/ambit/kernel/canon"
	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/store"
	agentv1 "github.com/ambitkernel/ambit/proto/gen/ambit/agent/v1"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/toolcall"
	"github.com/transparency-dev/merkle/compact"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Principals of the test world.
const (
	owner      = "policy-owner"
	agentName  = "agent"
	purpose    = "expense-refund"
	subject    = "employee-7"
	claimsDB   = "claims_db"
	claimKey   = "C-1001"
	version42  = "claims-v42"
	version43  = "claims-v43"
	kernelKey  = "kernel"
	evidenceID = "evidence"
	actionID   = "action"
	verifierID = "verifier"
)

// start is the test clock's first instant.
var start = time.Date(2026, 9, 20, 9, 0, 0, 0, time.UTC)

// clock is a controllable time source, safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// world is a kernel over a real SQLite store with real Ed25519 keys, and the
// adapters' signers.
type world struct {
	t        testing.TB
	ctx      context.Context
	path     string
	st       *store.Store
	k        *authority.Kernel
	clock    *clock
	keys     envelope.Keyring
	kernel   *envelope.Signer
	evidence *envelope.Signer
	action   *envelope.Signer
	verifier *envelope.Signer
	stranger *envelope.Signer // a key the kernel does not know
	// serves binds the adapters' identities to agents (none: shared).
	serves   authority.Serves
	ids      atomic.Int64
	receipts atomic.Int64
}

func newSigner(t testing.TB, id string) (*envelope.Signer, ed25519.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate key %s: %v", id, err)
	}
	return envelope.NewSigner(id, priv), pub
}

func newWorld(t testing.TB) *world {
	t.Helper()
	return newWorldAt(t, storetest.DSN(t, filepath.Join(t.TempDir(), "k.db")))
}

// newWorldAt is newWorld with its store at dsn.
func newWorldAt(t testing.TB, dsn string) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), path: dsn, clock: &clock{now: start}, keys: envelope.Keyring{}}
	for _, p := range []struct {
		id string
		s  **envelope.Signer
	}{{kernelKey, &w.kernel}, {evidenceID, &w.evidence}, {actionID, &w.action}, {verifierID, &w.verifier}} {
		s, pub := newSigner(t, p.id)
		*p.s = s
		w.keys[p.id] = pub
	}
	// The stranger signs as "evidence" with a key nobody registered.
	w.stranger, _ = newSigner(t, "stranger")
	w.st = w.openStore()
	w.k = w.newKernel(w.st)
	return w
}

func (w *world) openStore() *store.Store {
	w.t.Helper()
	st, err := store.Open(w.ctx, w.path, store.DurabilityNormal)
	if err != nil {
		w.t.Fatalf("store.Open: %v", err)
	}
	w.t.Cleanup(func() { _ = st.Close() })
	return st
}

func (w *world) options(st *store.Store) authority.Options {
	return authority.Options{
		Store:  st,
		Signer: w.kernel,
		Keys:   w.keys,
		Peers:  authority.Peers{Evidence: []string{evidenceID}, Action: []string{actionID}, Verifier: []string{verifierID}, Serves: w.serves},
		Authorities: canon.Authorities{
			ledgerv1.Scope_SCOPE_TASK:         {owner},
			ledgerv1.Scope_SCOPE_ORGANISATION: {owner},
		},
		Clock: w.clock.Now,
		Log:   zaptest.NewLogger(w.t),
		NewID: func(prefix string) string { return fmt.Sprintf("%s%04d", prefix, w.ids.Add(1)) },
	}
}

func (w *world) newKernel(st *store.Store) *authority.Kernel {
	w.t.Helper()
	k, err := authority.New(w.ctx, w.options(st))
	if err != nil {
		w.t.Fatalf("authority.New: %v", err)
	}
	return k
}

// coupledContract is the coupled profile bound to taskID, to claims_db/C-1001
// at claims-v42, valid for two days from the test clock's start.
func coupledContract(t testing.TB, taskID string, edits ...func(*contractv1.Contract)) *contractv1.Contract {
	t.Helper()
	c, err := contract.Profile("coupled-strict")
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	c.Binding.TaskId = taskID
	c.Binding.ValidUntil = timestamppb.New(start.Add(48 * time.Hour))
	c.Binding.Record = &contractv1.RecordRef{Source: claimsDB, Key: claimKey}
	c.Binding.StateVersion = version42
	for _, e := range edits {
		e(c)
	}
	return c
}

// contractItem is a policy-owned canon item holding c.
func contractItem(id string, c *contractv1.Contract) *ledgerv1.CanonItem {
	return &ledgerv1.CanonItem{
		CanonItemId:    id,
		Kind:           ledgerv1.ItemKind_ITEM_KIND_CONTRACT,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef:  "policy-repo:contracts/" + id + ".yaml@4f2c9e1",
		Scope:          ledgerv1.Scope_SCOPE_TASK,
		Lifetime:       ledgerv1.Lifetime_LIFETIME_TASK,
		PromotionState: ledgerv1.PromotionState_PROMOTION_STATE_PROPOSED,
		ConflictState:  ledgerv1.ConflictState_CONFLICT_STATE_NONE,
		Contract:       c,
	}
}

// propose records item as the policy owner.
func (w *world) propose(item *ledgerv1.CanonItem) canon.Classified {
	w.t.Helper()
	c, err := w.k.ProposeItem(w.ctx, owner, item)
	if err != nil {
		w.t.Fatalf("ProposeItem %s: %v", item.GetCanonItemId(), err)
	}
	return c
}

func (w *world) promote(id string) canon.Classified {
	w.t.Helper()
	c, err := w.k.PromoteItem(w.ctx, owner, id)
	if err != nil {
		w.t.Fatalf("PromoteItem %s: %v", id, err)
	}
	return c
}

func (w *world) bind(taskID, itemID string) canon.Classified {
	w.t.Helper()
	c, err := w.k.BindTask(w.ctx, "governance", taskID, itemID, agentName)
	if err != nil {
		w.t.Fatalf("BindTask %s → %s: %v", taskID, itemID, err)
	}
	return c
}

// item returns a ledger item as it now stands.
func (w *world) item(id string) canon.Classified {
	w.t.Helper()
	items, _, err := allItems(w.ctx, w.k, time.Time{})
	if err != nil {
		w.t.Fatalf("Items: %v", err)
	}
	for _, c := range items {
		if c.Item.GetCanonItemId() == id {
			return c
		}
	}
	w.t.Fatalf("no item %q in the ledger", id)
	return canon.Classified{}
}

// canonicalTask proposes, promotes and binds a coupled contract for taskID
// and returns the bound item.
func (w *world) canonicalTask(taskID string, edits ...func(*contractv1.Contract)) canon.Classified {
	w.t.Helper()
	id := "CTR-" + taskID
	w.propose(contractItem(id, coupledContract(w.t, taskID, edits...)))
	w.promote(id)
	c := w.bind(taskID, id)
	if c.Class != ledgerv1.CanonClass_CANON_CLASS_CANONICAL {
		w.t.Fatalf("contract %s is %s, want CANONICAL: %v", id, c.Class, c.Reasons)
	}
	return c
}

// evidenceReceipt is what the evidence adapter signs for a read of C-1001.
func (w *world) evidenceReceipt(taskID string, edits ...func(*receiptv1.EvidenceReceipt)) *receiptv1.EvidenceReceipt {
	r := &receiptv1.EvidenceReceipt{
		ReceiptId:    fmt.Sprintf("ev-%04d", w.receipts.Add(1)),
		TaskId:       taskID,
		Source:       claimsDB,
		RecordKey:    claimKey,
		Fields:       []string{"claim_id", "claimant_id", "receipt_total"},
		StateVersion: version42,
		Subject:      subject,
		ReadAt:       timestamppb.New(w.clock.Now()),
		ContentHash:  "sha256:0f1e2d",
		Provenance:   contractv1.Provenance_PROVENANCE_TRUSTED,
		Issuer:       evidenceID,
		Values: mustStruct(map[string]any{
			"claim_id": claimKey, "claimant_id": subject, "receipt_total": "17.40",
		}),
	}
	for _, e := range edits {
		e(r)
	}
	return r
}

func (w *world) sign(s *envelope.Signer, m proto.Message) *receiptv1.Envelope {
	w.t.Helper()
	env, err := s.Sign(m)
	if err != nil {
		w.t.Fatalf("sign: %v", err)
	}
	return env
}

// read plays the evidence adapter: authorise the read, sign the receipt and
// record it at the kernel before releasing it.
func (w *world) read(taskID string, edits ...func(*receiptv1.EvidenceReceipt)) (*receiptv1.Envelope, authority.Recorded) {
	w.t.Helper()
	r := w.evidenceReceipt(taskID, edits...)
	g, err := w.k.AuthorizeRead(w.ctx, authority.Read{Agent: agentName, TaskID: taskID, Purpose: purpose, Source: r.GetSource(), RecordKey: r.GetRecordKey(), Fields: r.GetFields()})
	if err != nil {
		w.t.Fatalf("AuthorizeRead: %v", err)
	}
	if g.GetProvenance() != contractv1.Provenance_PROVENANCE_TRUSTED {
		w.t.Fatalf("AuthorizeRead provenance = %s, want TRUSTED", g.GetProvenance())
	}
	env := w.sign(w.evidence, r)
	rec, err := w.k.RecordEvidence(w.ctx, evidenceID, env)
	if err != nil {
		w.t.Fatalf("RecordEvidence: %v", err)
	}
	return env, rec
}

// refund is the demo refund of claim C-1001, as the agent writes it.
func refund(minor int64, payee string) *contractv1.ToolCall {
	return refundOf(claimKey, minor, payee)
}

func refundOf(claim string, minor int64, payee string) *contractv1.ToolCall {
	return &contractv1.ToolCall{Tool: "refund", ArgumentsJson: fmt.Sprintf(
		`{"claim_id": %q, "amount": {"currency_code": "GBP", "minor_units": %d}, "payee_id": %q, "reason_code": "expense"}`, claim, minor, payee)}
}

func proposal(taskID string, c *contractv1.ToolCall, ev ...*receiptv1.Envelope) authority.Proposal {
	return authority.Proposal{Agent: agentName, TaskID: taskID, Purpose: purpose, Call: c, Evidence: ev}
}

func (w *world) submit(p authority.Proposal) *authority.Decided {
	w.t.Helper()
	d, err := w.k.Submit(w.ctx, p)
	if err != nil {
		w.t.Fatalf("Submit: %v", err)
	}
	return d
}

// allowed reads evidence, submits the GBP 17.40 refund and returns the
// decision and its capability, failing unless the kernel allows it.
func (w *world) allowed(taskID string) (*authority.Decided, *receiptv1.Capability) {
	w.t.Helper()
	env, _ := w.read(taskID)
	d := w.submit(proposal(taskID, refund(1740, subject), env))
	if got := verdictOf(d); got.Outcome != "OUTCOME_ALLOW" {
		w.t.Fatalf("Submit = %+v, want ALLOW", got)
	}
	return d, w.openCapability(d.GetCapability())
}

func (w *world) openCapability(env *receiptv1.Envelope) *receiptv1.Capability {
	w.t.Helper()
	var c receiptv1.Capability
	if err := (envelope.Keyring{kernelKey: w.keys[kernelKey]}).Open(env, kernelKey, &c); err != nil {
		w.t.Fatalf("open capability: %v", err)
	}
	return &c
}

// effect is the action adapter's signed effect receipt for a capability.
func (w *world) effect(c *receiptv1.Capability, id string) *receiptv1.Envelope {
	return w.sign(w.action, &receiptv1.EffectReceipt{
		ReceiptId: id, CapabilityId: c.GetCapabilityId(), TaskId: c.GetTaskId(), IdempotencyKey: c.GetIdempotencyKey(),
		Call: c.GetCall(), Destination: c.GetDestination(), RecordRef: "payments/PAY-1",
		ExecutedAt: timestamppb.New(w.clock.Now()), Issuer: actionID,
	})
}

// refusal is the action adapter's signed refusal receipt for a
// capability.
func (w *world) refusal(c *receiptv1.Capability, id, reason string) *receiptv1.Envelope {
	return w.sign(w.action, &receiptv1.RefusalReceipt{
		ReceiptId: id, CapabilityId: c.GetCapabilityId(), TaskId: c.GetTaskId(), IdempotencyKey: c.GetIdempotencyKey(),
		Call: c.GetCall(), Reason: reason, RefusedAt: timestamppb.New(w.clock.Now()), Issuer: actionID,
	})
}

// readback is the verifier's signed readback receipt.
func (w *world) readback(c *receiptv1.Capability, id, effectID string, status receiptv1.ReadbackStatus, findings ...string) *receiptv1.Envelope {
	return w.sign(w.verifier, &receiptv1.ReadbackReceipt{
		ReceiptId: id, CapabilityId: c.GetCapabilityId(), EffectReceiptId: effectID, TaskId: c.GetTaskId(),
		IdempotencyKey: c.GetIdempotencyKey(), Status: status, Findings: findings, RecordsFound: 1,
		ReadAt: timestamppb.New(w.clock.Now()), Issuer: verifierID,
	})
}

// redeemed redeems c for its own effect and fails unless it is the first.
func (w *world) redeemed(env *receiptv1.Envelope, c *receiptv1.Capability) {
	w.t.Helper()
	r, err := w.k.Redeem(w.ctx, actionID, env, c.GetIdempotencyKey(), agentName)
	if err != nil || !r.First {
		w.t.Fatalf("Redeem = %+v, %v; want first", r, err)
	}
}

// verdict is a decision reduced to what tests compare.
type verdict struct {
	Outcome string
	Codes   []string
}

func verdictOf(d *authority.Decided) verdict {
	v := verdict{Outcome: d.GetDecision().GetOutcome().String()}
	for _, r := range d.GetDecision().GetReasons() {
		v.Codes = append(v.Codes, contract.CodeName(r.GetCode()))
	}
	return v
}

// wantRefusal fails unless err is a *Refusal of the kind and reason.
func wantRefusal(t *testing.T, err error, kind error, reason string) {
	t.Helper()
	var r *authority.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("err = %v (%T), want a *Refusal %v/%s", err, err, kind, reason)
	}
	if !errors.Is(err, kind) || r.Reason != reason {
		t.Fatalf("refusal = %v/%s (%q), want %v/%s", r.Kind, r.Reason, r.Message, kind, reason)
	}
	if r.Message == "" {
		t.Errorf("refusal %s has no message", r.Reason)
	}
}

func (w *world) entries() []journal.Entry {
	w.t.Helper()
	e, err := w.k.Entries(w.ctx, 0, 0)
	if err != nil {
		w.t.Fatalf("Entries: %v", err)
	}
	return e
}

func kinds(es []journal.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Kind
	}
	return out
}

// flip returns a copy of env with one payload byte changed.
func flip(env *receiptv1.Envelope) *receiptv1.Envelope {
	c := proto.CloneOf(env)
	c.Payload = append([]byte(nil), c.Payload...)
	c.Payload[len(c.Payload)/2] ^= 0x01
	return c
}

type journalEntry = journal.Entry

// rootOf is the hex root hash of the tree over es.
func rootOf(es []journal.Entry) string {
	rng := (&compact.RangeFactory{Hash: journal.Hasher.HashChildren}).NewEmptyRange(0)
	for i := range es {
		if err := rng.Append(journal.LeafHash(&es[i]), nil); err != nil {
			panic(err)
		}
	}
	root, _ := rng.GetRootHash(nil)
	if len(es) == 0 {
		root = journal.EmptyRoot()
	}
	return hex.EncodeToString(root)
}

func timestampAt(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

func mustStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

// emailTool grants email_attachment to any recipient (destination
// "external").
func emailTool() *contractv1.ToolGrant {
	schema, err := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"recipient": map[string]any{"type": "string"},
			"fields":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []any{"recipient"},
	})
	if err != nil {
		panic(err)
	}
	return &contractv1.ToolGrant{Name: "email_attachment", InputSchema: schema,
		Destinations: []*contractv1.DestinationClass{{Name: "external", When: "true"}}}
}

func emailCall(recipient string) *contractv1.ToolCall {
	return &contractv1.ToolCall{Tool: "email_attachment", ArgumentsJson: fmt.Sprintf(`{"recipient": %q}`, recipient)}
}

// refundIn is the C-1001 refund in any currency and amount.
func refundIn(currency string, minor int64) *contractv1.ToolCall {
	return &contractv1.ToolCall{Tool: "refund", ArgumentsJson: fmt.Sprintf(
		`{"claim_id": %q, "amount": {"currency_code": %q, "minor_units": %d}, "payee_id": %q}`, claimKey, currency, minor, subject)}
}

// canonicalOf is a call as a capability binds it.
func canonicalOf(c *contractv1.ToolCall) *contractv1.ToolCall {
	call, err := toolcall.Parse(c.GetTool(), c.GetArgumentsJson())
	if err != nil {
		panic(err)
	}
	return &contractv1.ToolCall{Tool: call.Tool, ArgumentsJson: call.Canonical()}
}

// changed plays the evidence adapter reading the bound record at a new
// version: the kernel notes the change (revoking what depended on the old
// one) and refuses to release the read to a task bound to the old version.
func (w *world) changed(taskID, version string) authority.Recorded {
	w.t.Helper()
	rec, err := w.k.RecordEvidence(w.ctx, evidenceID, w.sign(w.evidence, w.evidenceReceipt(taskID, func(r *receiptv1.EvidenceReceipt) { r.StateVersion = version })))
	var r *authority.Refusal
	if !errors.As(err, &r) || r.Reason != "STATE_VERSION_CHANGED" {
		w.t.Fatalf("RecordEvidence at %s = %v, want a STATE_VERSION_CHANGED refusal", version, err)
	}
	return rec
}

// allCommitments lists a task's commitments (every task's for ""), two to
// a page, so that every listing also walks the pages.
// allItems walks the ledger's items now (at zero) or at a past instant in
// pages of two, and returns them with the head of the last page.
// allPages reads every page of a listing, from the first: page reads the
// page after a key and returns the key to continue after, empty on the
// last page.
func allPages[T any](page func(after string) ([]T, string, error)) ([]T, error) {
	var all []T
	seen := map[string]bool{}
	for after := ""; ; {
		items, next, err := page(after)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		// Pages that come round again would never end.
		if seen[next] {
			return nil, fmt.Errorf("the page after %q goes on after %q a second time", after, next)
		}
		seen[next], after = true, next
	}
}

func allItems(ctx context.Context, k *authority.Kernel, at time.Time) ([]canon.Classified, string, error) {
	var head string
	all, err := allPages(func(after string) (page []canon.Classified, next string, err error) {
		page, head, next, err = k.Items(ctx, authority.ItemQuery{At: at, After: after, Limit: 2})
		return page, next, err
	})
	return all, head, err
}

func allCommitments(ctx context.Context, k *authority.Kernel, taskID string) ([]*agentv1.Commitment, error) {
	return allPages(func(after string) ([]*agentv1.Commitment, string, error) {
		return k.Commitments(ctx, authority.CommitmentQuery{TaskID: taskID, After: after, Limit: 2})
	})
}

// allApprovals lists every approval in a state, a page of one at a time.
func allApprovals(ctx context.Context, k *authority.Kernel, state kernelv1.ApprovalState) ([]*kernelv1.Approval, error) {
	return allPages(func(after string) ([]*kernelv1.Approval, string, error) {
		return k.Approvals(ctx, authority.ApprovalQuery{State: state, After: after, Limit: 1})
	})
}
