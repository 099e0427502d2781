package e2e_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/examples/demo"
	"github.com/ambitkernel/ambit/kernel/journal"
	"github.com/ambitkernel/ambit/kernel/journal/bundle"
	"github.com/ambitkernel/ambit/kernel/journal/checkpoint"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	logv1 "github.com/ambitkernel/ambit/proto/gen/ambit/log/v1"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/pki"
	"github.com/ambitkernel/ambit/sdk/sqldb"
	merkleproof "github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// checkpointDir is the kernel's default checkpoint directory.
func checkpointDir(st *stack) string { return st.KernelDB + ".checkpoints" }

// proposeItems records n canon items through the governance API, each
// contract changed by edits: n journal entries that need no adapter. It
// returns the items' ids.
func proposeItems(t *testing.T, st *stack, prefix string, n int, edits ...func(*contractv1.Contract)) []string {
	t.Helper()
	ctx := testCtx(t)
	conn, err := st.Conn(ctx, st.Kernel.Governance, devstack.PolicyOwner)
	if err != nil {
		t.Fatal(err)
	}
	gov := kernelv1.NewGovernanceServiceClient(conn)
	e, _ := st.Example(demo.ExpenseRefund)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		ct, err := demo.Contract(e, "task-"+id, demo.Claim1001, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, edit := range edits {
			edit(ct)
		}
		if _, err := gov.ProposeItem(ctx, &kernelv1.ProposeItemRequest{Item: demo.ContractItem(id, demo.ProvenanceRef(e, ct), ct)}); err != nil {
			t.Fatalf("propose %s: %v", id, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestItemPagesFitAClient: items whose contracts are large (here five of
// 900 KiB, each in a request under the 1 MiB bound), and the journal's
// entries that propose them, are listed in pages a client with gRPC's
// default 4 MiB limit can read: a page ends early, with its continuation,
// rather than pass 3 MiB. Asked for all at once, they would be 4.5 MiB.
// ambitctl receipts follows such pages to the journal's end.
func TestItemPagesFitAClient(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	big := proposeItems(t, st, "big", 5, func(ct *contractv1.Contract) {
		ct.GetAction().GetTools()[0].GetInputSchema().GetFields()["description"] = structpb.NewStringValue(strings.Repeat("a long schema ", 900<<10/14))
	})
	listed, short := walkPages(t, func(after string) (proto.Message, []string, string, error) {
		page, err := st.Gov.ListItems(ctx, &kernelv1.ListItemsRequest{Limit: 1000, AfterItemId: after})
		var ids []string
		for _, it := range page.GetItems() {
			ids = append(ids, it.GetItem().GetCanonItemId())
		}
		return page, ids, page.GetNextAfterItemId(), err
	})
	if !short {
		t.Error("no page of items ended early")
	}
	if n := len(listed); n < 5 || !slices.Equal(listed[n-5:], big) || len(slices.Compact(slices.Sorted(slices.Values(listed)))) != n {
		t.Errorf("items listed: %v; want each once, the big ones last", listed)
	}

	// The journal's entries, whose proposals carry the same contracts.
	seqs, short := walkPages(t, func(after int64) (proto.Message, []int64, int64, error) {
		page, err := st.Gov.ListEntries(ctx, &kernelv1.ListEntriesRequest{Limit: 1000, AfterSeq: after})
		var seqs []int64
		for _, e := range page.GetEntries() {
			seqs = append(seqs, e.GetSeq())
		}
		return page, seqs, page.GetNextAfterSeq(), err
	})
	cp, err := st.Gov.GetCheckpoint(ctx, &kernelv1.GetCheckpointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	size := int64(cp.GetCheckpoint().GetSize())
	if n := int64(len(seqs)); n == 0 || n != size || seqs[0] != 1 || seqs[n-1] != n {
		t.Errorf("entries listed: %v; want each of the journal's %d once", seqs, size)
	}
	if !short {
		t.Error("no page of entries ended early")
	}
	// ambitctl follows the pages to the end.
	out, err := ambitctl(t, "receipts", "--kind", "canon", "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", "governance")
	if err != nil {
		t.Fatalf("ambitctl receipts: %v\n%s", err, out)
	}
	for _, id := range big {
		if !strings.Contains(out, " "+id+"\n") {
			t.Errorf("ambitctl receipts --kind canon does not list %s:\n%s", id, out)
		}
	}
}

// walkPages reads a listing a page at a time from its start: page reads
// the page after a key and returns it, its entries' keys and the key to go
// on after (zero on the last page). A page past 3 MiB fails the test;
// short reports whether a page other than the last held fewer than the
// 1,000 entries asked.
func walkPages[K comparable](t *testing.T, page func(after K) (proto.Message, []K, K, error)) (keys []K, short bool) {
	t.Helper()
	var after, zero K
	seen := map[K]bool{}
	for {
		m, ks, next, err := page(after)
		if err != nil {
			t.Fatalf("page after %v: %v", after, err)
		}
		if n := proto.Size(m); n > 3<<20+1<<10 {
			t.Errorf("page after %v: %d bytes", after, n)
		}
		keys = append(keys, ks...)
		if next == zero {
			return keys, short
		}
		// Pages that come round again would never end.
		if seen[next] {
			t.Fatalf("the page after %v goes on after %v a second time", after, next)
		}
		short = short || len(ks) < 1000
		seen[next], after = true, next
	}
}

// TestReceiptBundle exports a decision receipt from the running kernel and
// verifies it offline against the checkpoint it came with; the bundle and
// the checkpoint refuse any changed byte.
func TestReceiptBundle(t *testing.T) {
	st := startStack(t, devstack.Options{})
	d, r := allowed(t, st, "bundle-task")
	dir := t.TempDir()
	bundlePath, cpPath := filepath.Join(dir, "decision.bundle"), filepath.Join(dir, "checkpoint")
	out, err := ambitctl(t, "receipt", "export", d.GetDecisionId(), "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", "governance",
		"--out", bundlePath, "--checkpoint-out", cpPath)
	if err != nil {
		t.Fatalf("receipt export: %v\n%s", err, out)
	}
	verify := func(args ...string) (string, error) {
		// An agent's key folder holds every signer's public key.
		return ambitctl(t, append([]string{"receipt", "verify", "--pki", pki.IdentityDir(st.PKI, "agent")}, args...)...)
	}
	out, err = verify(bundlePath, "--checkpoint", cpPath)
	// The decision receipt was signed with its capability: the second of
	// two records under one signature.
	if err != nil || !strings.HasPrefix(out, "OK  DecisionReceipt "+d.GetDecisionId()+" signed by kernel (record 2 of 2 signed together);") {
		t.Fatalf("receipt verify: %v\n%s", err, out)
	}
	// The evidence receipt, signed by the evidence adapter, exports too.
	evPath := filepath.Join(dir, "evidence.bundle")
	if out, err := ambitctl(t, "receipt", "export", r.Receipt.GetReceiptId(), "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", "governance", "--out", evPath); err != nil {
		t.Fatalf("export evidence: %v\n%s", err, out)
	}
	// Read alone, it was signed alone.
	if out, err := verify(evPath); err != nil || !strings.Contains(out, "signed by evidence;") {
		t.Errorf("verify evidence: %v\n%s", err, out)
	}
	if out, err := ambitctl(t, "receipt", "export", "no-such-receipt", "--kernel", st.Kernel.Governance, "--pki", st.PKI, "--as", "governance", "--out", evPath); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("export of an unknown receipt: %v\n%s", err, out)
	}

	// The same proof through the API, against the latest checkpoint, and
	// a consistency proof from an earlier size.
	ctx := testCtx(t)
	var b logv1.ReceiptBundle
	raw, err := os.ReadFile(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	ip, err := st.Gov.GetInclusionProof(ctx, &kernelv1.GetInclusionProofRequest{LeafIndex: b.GetLeafIndex()})
	if err != nil {
		t.Fatal(err)
	}
	cpNow := ip.GetCheckpoint()
	leaf, err := hex.DecodeString(b.GetEntry().GetHash())
	if err != nil {
		t.Fatal(err)
	}
	if err := merkleproof.VerifyInclusion(journal.Hasher, b.GetLeafIndex(), cpNow.GetSize(), leaf, ip.GetProof().GetHashes(), cpNow.GetRootHash()); err != nil {
		t.Errorf("inclusion proof from the API: %v", err)
	}
	cons, err := st.Gov.GetConsistencyProof(ctx, &kernelv1.GetConsistencyProofRequest{FromSize: b.GetInclusion().GetTreeSize(), ToSize: cpNow.GetSize()})
	if err != nil {
		t.Fatal(err)
	}
	var bundleCP checkpoint.Checkpoint
	if bundleCP, err = checkpoint.Open(b.GetCheckpoint(), mustVerifier(t, st, b.GetCheckpoint())); err != nil {
		t.Fatal(err)
	}
	if err := merkleproof.VerifyConsistency(journal.Hasher, bundleCP.Head.Size, cpNow.GetSize(), cons.GetProof().GetHashes(), bundleCP.Head.Root, cpNow.GetRootHash()); err != nil {
		t.Errorf("consistency proof from the API: %v", err)
	}
	if _, err := st.Gov.GetInclusionProof(ctx, &kernelv1.GetInclusionProofRequest{LeafIndex: 0, TreeSize: cpNow.GetSize() + 1000}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a proof beyond the log: %v, want InvalidArgument", err)
	}

	// Every byte of the exported bundle matters, and of its checkpoint.
	data, err := os.ReadFile(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.Keys()
	if err != nil {
		t.Fatal(err)
	}
	note, err := os.ReadFile(cpPath)
	if err != nil {
		t.Fatal(err)
	}
	origin, _, _ := strings.Cut(string(note), "\n")
	v, err := checkpoint.NewVerifier(origin, keys["kernel"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Verify(data, keys, v); err != nil {
		t.Fatal(err)
	}
	for i := range data {
		for _, flip := range []byte{0x01, 0x80} {
			bad := append([]byte(nil), data...)
			bad[i] ^= flip
			if _, err := bundle.Verify(bad, keys, v); err == nil {
				t.Fatalf("bundle byte %d xor %#x verifies", i, flip)
			}
		}
	}
	for i := range note {
		bad := append([]byte(nil), note...)
		bad[i] ^= 0x01
		if _, err := checkpoint.Open(bad, v); err == nil {
			t.Fatalf("checkpoint byte %d xor 1 verifies", i)
		}
	}
	// And through the command, at a few places of each file.
	for _, tc := range []struct {
		path string
		at   []int
	}{{bundlePath, []int{0, len(data) / 3, len(data) / 2, len(data) - 1}}, {cpPath, []int{0, len(origin) + 1, len(note) - 10}}} {
		orig, _ := os.ReadFile(tc.path)
		for _, i := range tc.at {
			bad := append([]byte(nil), orig...)
			bad[i] ^= 0x01
			if err := os.WriteFile(tc.path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := verify(bundlePath, "--checkpoint", cpPath); err == nil || !strings.HasPrefix(out, "FAIL") {
				t.Errorf("%s with byte %d changed: %v\n%s", filepath.Base(tc.path), i, err, out)
			}
		}
		if err := os.WriteFile(tc.path, orig, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := verify(bundlePath, "--checkpoint", cpPath); err != nil {
		t.Errorf("restored files: %v\n%s", err, out)
	}
}

func mustVerifier(t *testing.T, st *stack, signed []byte) note.Verifier {
	t.Helper()
	keys, err := st.Keys()
	if err != nil {
		t.Fatal(err)
	}
	origin, _, _ := strings.Cut(string(signed), "\n")
	v, err := checkpoint.NewVerifier(origin, keys["kernel"])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var badRange = regexp.MustCompile(`^FAIL  entr(?:y (\d+)|ies (\d+)\.\.(\d+)):`)

// failedAt parses "FAIL  entry N" or "FAIL  entries A..B".
func failedAt(t *testing.T, out string) (int64, int64) {
	t.Helper()
	m := badRange.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no FAIL line naming an entry:\n%s", out)
	}
	if m[1] != "" {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n, n
	}
	a, _ := strconv.ParseInt(m[2], 10, 64)
	b, _ := strconv.ParseInt(m[3], 10, 64)
	return a, b
}

// rewriteJournal is the strongest tamperer: it rebuilds the journal from
// entries changed by f, every stored hash included.
func rewriteJournal(t *testing.T, path string, f func([]journal.Entry) []journal.Entry) {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := journal.Read(ctx, db, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM journal`); err != nil {
		t.Fatal(err)
	}
	for _, e := range f(es) {
		if _, err := journal.Append(ctx, tx, e.At, e.Kind, e.Ref, e.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerVerifyAgainstCheckpoints tampers with copies of a stopped
// kernel's database in every way and checks that `ambitctl ledger verify
// --db --checkpoint` names the first bad entry, or the window its
// checkpoints narrow it to.
func TestLedgerVerifyAgainstCheckpoints(t *testing.T) {
	st := startStack(t, devstack.Options{})
	for i := range 3 {
		allowed(t, st, fmt.Sprintf("verify-task-%d", i))
	}
	// Every task's commitments, two to a page: all three, each once.
	ctx := testCtx(t)
	first, err := st.Gov.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{Limit: 2})
	if err != nil || len(first.GetCommitments()) != 2 || first.GetNextAfterCapabilityId() != first.GetCommitments()[1].GetCapabilityId() {
		t.Fatalf("first page: %v, %v", first, err)
	}
	rest, err := st.Gov.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{Limit: 2, AfterCapabilityId: first.GetNextAfterCapabilityId()})
	if err != nil || len(rest.GetCommitments()) != 1 || rest.GetNextAfterCapabilityId() != "" ||
		rest.GetCommitments()[0].GetCapabilityId() <= first.GetNextAfterCapabilityId() {
		t.Fatalf("last page: %v, %v", rest, err)
	}
	if _, err := st.Gov.ListCommitments(ctx, &kernelv1.ListCommitmentsRequest{Limit: 1001}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a page of 1001: %v, want InvalidArgument", err)
	}
	for _, req := range []*kernelv1.ListApprovalsRequest{{Limit: 1001}, {Limit: -1}, {State: 99}, {AfterApprovalId: strings.Repeat("a", 257)}} {
		if _, err := st.Gov.ListApprovals(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("ListApprovals(%v): %v, want InvalidArgument", req, err)
		}
	}
	proposeItems(t, st, "verify-item", 4)
	// The ledger's items, three to a page, now and replayed to now: the
	// same items, each once, in the order first recorded.
	walk := func(at *timestamppb.Timestamp) []string {
		var ids []string
		req := &kernelv1.ListItemsRequest{At: at, Limit: 3}
		for {
			page, err := st.Gov.ListItems(ctx, req)
			if err != nil || len(page.GetItems()) > 3 {
				t.Fatalf("items after %q: %v, %v", req.AfterItemId, page, err)
			}
			for _, it := range page.GetItems() {
				ids = append(ids, it.GetItem().GetCanonItemId())
			}
			if req.AfterItemId = page.GetNextAfterItemId(); req.AfterItemId == "" {
				return ids
			}
		}
	}
	now := walk(nil)
	if n := len(now); n < 5 || !slices.Equal(now[n-4:], []string{"verify-item-0", "verify-item-1", "verify-item-2", "verify-item-3"}) ||
		len(slices.Compact(slices.Sorted(slices.Values(now)))) != n {
		t.Errorf("items now, by pages of three: %v", now)
	}
	if replayed := walk(timestamppb.Now()); !slices.Equal(replayed, now) {
		t.Errorf("items replayed to now, by pages of three: %v, want %v", replayed, now)
	}
	for _, req := range []*kernelv1.ListItemsRequest{{Limit: 1001}, {AfterItemId: "no-such-item"}, {At: timestamppb.New(time.Unix(0, 0)), AfterItemId: now[0]}} {
		if _, err := st.Gov.ListItems(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("ListItems(%v): %v, want InvalidArgument", req, err)
		}
	}
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	cps := checkpointDir(st)
	verify := func(db string) (string, error) {
		return ambitctl(t, "ledger", "verify", "--db", db, "--checkpoint", cps, "--pki", pki.IdentityDir(st.PKI, devstack.Governance))
	}
	out, err := verify(st.KernelDB)
	if err != nil || !strings.Contains(out, "an append-only extension of") {
		t.Fatalf("intact journal: %v\n%s", err, out)
	}
	var n int
	if _, err := fmt.Sscanf(out, "OK  %d entries", &n); err != nil || n < 20 {
		t.Fatalf("intact journal of %d entries (%v):\n%s", n, err, out)
	}
	keep := func(m int) func([]journal.Entry) []journal.Entry {
		return func(es []journal.Entry) []journal.Entry { return es[:m] }
	}
	tests := []struct {
		name   string
		tamper func([]journal.Entry) []journal.Entry
		bad    int // the first entry tampered with
		last   int // for a truncation: the last removed
	}{
		{name: "truncated: last 1", tamper: keep(n - 1), bad: n, last: n},
		{name: "truncated: last 5", tamper: keep(n - 5), bad: n - 4, last: n},
		{name: "truncated: half", tamper: keep(n / 2), bad: n/2 + 1, last: n},
		{name: "truncated: all", tamper: keep(0), bad: 1, last: n},
		{name: "rewritten suffix", bad: 7, tamper: func(es []journal.Entry) []journal.Entry {
			es[6].Body = append(es[6].Body, 0)
			return es
		}},
		{name: "swapped", bad: 9, tamper: func(es []journal.Entry) []journal.Entry {
			es[8], es[9] = es[9], es[8]
			return es
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "kernel.db")
			copyFile(t, st.KernelDB, db)
			rewriteJournal(t, db, tt.tamper)
			out, err := verify(db)
			if err == nil {
				t.Fatalf("tampered journal verifies:\n%s", out)
			}
			first, last := failedAt(t, out)
			switch {
			case tt.last > 0 && (first != int64(tt.bad) || last != int64(tt.last)):
				t.Errorf("named entries %d..%d, want %d..%d removed:\n%s", first, last, tt.bad, tt.last, out)
			case first > int64(tt.bad) || last < int64(tt.bad):
				t.Errorf("named entries %d..%d, which do not hold entry %d:\n%s", first, last, tt.bad, out)
			}
		})
	}
}

// refusedRange finds the entries a refusal says do not match a checkpoint:
// "entries F..S do not match the checkpoint of size S", or "entry F does
// not match the checkpoint of size F".
var refusedRange = regexp.MustCompile(`entr(?:y (\d+) does|ies (\d+)\.\.(\d+) do) not match the checkpoint of size (\d+)\b`)

// namesEntry reports whether a refusal names a range of entries, up to a
// checkpoint's size, that holds entry n.
func namesEntry(n int) func(string) bool {
	return func(refusal string) bool {
		m := refusedRange.FindStringSubmatch(refusal)
		if m == nil {
			return false
		}
		first, last := m[1], m[1]
		if first == "" {
			first, last = m[2], m[3]
		}
		f, _ := strconv.Atoi(first)
		l, _ := strconv.Atoi(last)
		size, _ := strconv.Atoi(m[4])
		return l == size && f <= n && n <= l
	}
}

// TestNamesEntry: a refusal names entry 5 only with a range that holds it,
// ending at the size of the checkpoint it names.
func TestNamesEntry(t *testing.T) {
	for refusal, want := range map[string]bool{
		"entries 1..9 do not match the checkpoint of size 9 (root 53, recomputed 54): the first bad entry is among them": true,
		"entries 1..12 do not match the checkpoint of size 12 (root 53, recomputed 54)":                                  true,
		"entries 3..7 do not match the checkpoint of size 7 (root 53, recomputed 54) (entries up to 2 match)":            true,
		"entry 5 does not match the checkpoint of size 5 (root 53, recomputed 54): it was edited, moved or replaced":     true,
		"entries 6..12 do not match the checkpoint of size 12 (root 53, recomputed 54)":                                  false,
		"entries 1..4 do not match the checkpoint of size 4 (root 53, recomputed 54)":                                    false,
		"entries 1..9 do not match the checkpoint of size 12 (root 53, recomputed 54)":                                   false,
		"entry 6 does not match the checkpoint of size 6 (root 53, recomputed 54)":                                       false,
		"the journal ends at entry 11, but a checkpoint covers 12 entries: entry 12 was removed":                         false,
	} {
		if got := namesEntry(5)(refusal); got != want {
			t.Errorf("namesEntry(5)(%q) = %v, want %v", refusal, got, want)
		}
	}
}

// TestKernelRefusesTamperedJournal restarts the real kernel binary on its
// own database: intact it starts, with a rewritten suffix or a truncated
// journal it refuses to, naming the entry.
func TestKernelRefusesTamperedJournal(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	proposeItems(t, st, "start-item", 12)
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "kernel.db")
	copyFile(t, st.KernelDB, backup)
	if err := st.Restart(ctx, devstack.Kernel, nil); err != nil {
		t.Fatalf("restart on an intact journal: %v", err)
	}
	for _, tc := range []struct {
		name   string
		tamper func([]journal.Entry) []journal.Entry
		// named reports whether the refusal names the tampering.
		named func(refusal string) bool
	}{
		// Its checkpoints hold the 12 entries. A rewrite of entry 5 is
		// among the entries of the first checkpoint that covers it: the
		// one at 12, or one the publisher signed on the way, as timing
		// has it. A truncation names the first entry lost.
		{name: "rewritten entry 5", named: namesEntry(5), tamper: func(es []journal.Entry) []journal.Entry {
			es[4].Ref = "forged"
			return es
		}},
		{name: "truncated", named: func(refusal string) bool {
			return strings.Contains(refusal, "the journal ends at entry 11, but a checkpoint covers 12 entries: entry 12 was removed")
		}, tamper: func(es []journal.Entry) []journal.Entry { return es[:11] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := st.Stop(); err != nil {
				t.Fatal(err)
			}
			copyFile(t, backup, st.KernelDB)
			rewriteJournal(t, st.KernelDB, tc.tamper)
			err := st.Restart(ctx, devstack.Kernel, nil)
			if err == nil {
				t.Fatal("the kernel started on a tampered journal")
			}
			logs, _ := os.ReadFile(st.LogPath(devstack.Kernel))
			last := string(logs[strings.LastIndex(strings.TrimSpace(string(logs)), "\n")+1:])
			if !strings.Contains(last, "refusing to start") || !strings.Contains(last, "does not verify against the kernel's latest checkpoint") {
				t.Errorf("start-up error: %v; last log line:\n%s", err, last)
			}
			t.Logf("the kernel refused: %s", last)
			if !tc.named(last) {
				t.Errorf("the refusal does not name the tampering:\n%s", last)
			}
		})
	}
	// Restored, the kernel starts again.
	copyFile(t, backup, st.KernelDB)
	if err := st.Restart(ctx, devstack.Kernel, nil); err != nil {
		t.Fatalf("restart on the restored journal: %v", err)
	}
}

// TestWitnessCatchesRollback keeps a witness beside a kernel, then rolls
// the kernel back to an older copy of its database and checkpoints: the
// witness refuses the rolled-back log, smaller and then forked.
func TestWitnessCatchesRollback(t *testing.T) {
	st := startStack(t, devstack.Options{})
	ctx := testCtx(t)
	w := filepath.Join(t.TempDir(), "witness")
	witness := func() (string, error) {
		return ambitctl(t, "witness", "--dir", w, "--kernel", st.Kernel.Governance, "--pki", pki.IdentityDir(st.PKI, devstack.Governance), "--as", devstack.Governance)
	}
	proposeItems(t, st, "w1", 3)
	out, err := witness()
	if err != nil || !strings.Contains(out, "at size 3,") || !strings.Contains(out, "first checkpoint") {
		t.Fatalf("first round: %v\n%s", err, out)
	}
	// An older copy of the kernel's database and checkpoints.
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	old := t.TempDir()
	copyFile(t, st.KernelDB, filepath.Join(old, "kernel.db"))
	copyTree(t, checkpointDir(st), filepath.Join(old, "checkpoints"))
	if err := st.Restart(ctx, devstack.Kernel, nil); err != nil {
		t.Fatal(err)
	}
	proposeItems(t, st, "w2", 4)
	if out, err := witness(); err != nil || !strings.Contains(out, "at size 7,") || !strings.Contains(out, "extends 3") {
		t.Fatalf("second round: %v\n%s", err, out)
	}
	// The rollback: the kernel starts on the older copy, whose own
	// checkpoints agree with it.
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(old, "kernel.db"), st.KernelDB)
	if err := os.RemoveAll(checkpointDir(st)); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(old, "checkpoints"), checkpointDir(st))
	if err := st.Restart(ctx, devstack.Kernel, nil); err != nil {
		t.Fatalf("restart on the older copy: %v", err)
	}
	if out, err := witness(); err == nil || !strings.HasPrefix(out, "REFUSED") {
		t.Errorf("rolled back: %v\n%s", err, out)
	}
	// It grows past what the witness saw, on another history.
	proposeItems(t, st, "w3", 8)
	if out, err := witness(); err == nil || !strings.HasPrefix(out, "REFUSED") || !strings.Contains(out, "not an extension") {
		t.Errorf("forked: %v\n%s", err, out)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			copyFile(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
		}
	}
}
