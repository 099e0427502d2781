package envelope

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// mth is RFC 6962's Merkle tree hash of leaf hashes, by its definition.
func mth(leaves [][]byte) []byte {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	return rfc6962.DefaultHasher.HashChildren(mth(leaves[:k]), mth(leaves[k:]))
}

func TestTree(t *testing.T) {
	for n := 1; n <= 40; n++ {
		leaves := make([][]byte, n)
		for i := range leaves {
			sum := sha256.Sum256([]byte(fmt.Sprint(i)))
			leaves[i] = sum[:]
		}
		paths := make([][][]byte, n)
		root := tree(leaves, paths)
		if !bytes.Equal(root, mth(leaves)) {
			t.Fatalf("%d leaves: root %x, want %x", n, root, mth(leaves))
		}
		for i := range leaves {
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(i), uint64(n), leaves[i], paths[i], root); err != nil {
				t.Fatalf("%d leaves, leaf %d: %v", n, i, err)
			}
		}
	}
}

// TestGroupSealsWaitersTogether holds the lead while callers queue, then
// passes it on: the next leader seals as many waiting callers' records
// as one signature may cover, the leader after it the rest, and no
// caller is left waiting.
func TestGroupSealsWaitersTogether(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSigner("kernel", priv)
	s.group.leading = true // as if another caller were sealing

	const callers = 150 // 300 records: a batch of maxBatch, then the rest
	envs := make([][]*receiptv1.Envelope, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			var err error
			envs[i], err = s.SignAll(&receiptv1.Capability{CapabilityId: fmt.Sprint("cap-", i)}, &receiptv1.DecisionReceipt{DecisionId: fmt.Sprint("dec-", i)})
			if err != nil {
				t.Error(err)
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.group.mu.Lock()
		n := len(s.group.waiting)
		if n == callers {
			s.group.waiting[0].wake <- struct{}{} // the lead passes on
		}
		s.group.mu.Unlock()
		if n == callers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d callers waiting", n, callers)
		}
	}
	wg.Wait()

	ring := Keyring{"kernel": pub}
	sizes, sigs := map[uint64]int{}, map[uint64][]byte{}
	for i, pair := range envs {
		for j, env := range pair {
			size := env.GetBatch().GetSize()
			sizes[size]++
			if sigs[size] == nil {
				sigs[size] = env.GetSignature()
			}
			if !bytes.Equal(env.GetSignature(), sigs[size]) {
				t.Errorf("caller %d record %d: a signature of its own", i, j)
			}
		}
		var c receiptv1.Capability
		if err := ring.Open(pair[0], "kernel", &c); err != nil || c.GetCapabilityId() != fmt.Sprint("cap-", i) {
			t.Errorf("caller %d: opened %q: %v", i, c.GetCapabilityId(), err)
		}
	}
	if want := map[uint64]int{maxBatch: maxBatch, 2*callers - maxBatch: 2*callers - maxBatch}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("records by batch size %v, want %v", sizes, want)
	}
	if s.group.leading || len(s.group.waiting) != 0 {
		t.Errorf("after the batch: leading %v, %d waiting", s.group.leading, len(s.group.waiting))
	}
}

// TestGroupGathersRunnableCallers starts callers on one thread: the first
// to lead lets the others reach the group before it takes its batch, so
// they share its signature rather than signing one after another.
func TestGroupGathersRunnableCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSigner("kernel", priv)
	const callers = 16
	envs := make([]*receiptv1.Envelope, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			var err error
			envs[i], err = s.Sign(&receiptv1.DecisionReceipt{DecisionId: fmt.Sprint("dec-", i)})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	sigs := map[string]bool{}
	for _, env := range envs {
		sigs[string(env.GetSignature())] = true
	}
	// One, unless the collector or the runtime preempted a caller.
	if len(sigs) > 2 {
		t.Errorf("%d callers made %d signatures, want one or two", callers, len(sigs))
	}
}
