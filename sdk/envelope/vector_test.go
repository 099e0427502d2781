package envelope_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The Python and TypeScript clients check their verifiers against
// envelopes this package signed, kept in clients/testdata.
var vectors = filepath.Join("..", "..", "clients", "testdata")

// vectorKey is the key the vectors are signed with: its seed is the bytes
// 0x01..0x20.
func vectorKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// TestBatchVector checks that clients/testdata/envelope-batch.json holds
// what this package signs today; UPDATE_GOLDEN=1 rewrites it.
func TestBatchVector(t *testing.T) {
	key := vectorKey()
	records := []proto.Message{
		&receiptv1.Capability{CapabilityId: "cap-1", DecisionId: "dec-1", TaskId: "task-1", IdempotencyKey: "idem-1", Holder: "agent-1"},
		&receiptv1.DecisionReceipt{DecisionId: "dec-1", TaskId: "task-1", Agent: "agent-1", CapabilityId: "cap-1"},
		&receiptv1.EffectReceipt{ReceiptId: "eff-1", CapabilityId: "cap-1", TaskId: "task-1", IdempotencyKey: "idem-1", RecordRef: "pay-1", Issuer: "action"},
	}
	envs, err := envelope.NewSigner("kernel", key).SignAll(records...)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Envelope json.RawMessage `json:"envelope"`
		Record   json.RawMessage `json:"record"`
	}
	v := struct {
		Comment   string  `json:"comment"`
		PublicKey string  `json:"public_key_hex"`
		Batch     []entry `json:"batch"`
	}{
		Comment:   "Three records signed together by sdk/envelope (Go) with the Ed25519 key whose seed is the bytes 0x01..0x20, key id \"kernel\": one signature over the root of their Merkle tree, each envelope carrying its inclusion path. The clients check the same batch format.",
		PublicKey: hex.EncodeToString(key.Public().(ed25519.PublicKey)),
	}
	for i, env := range envs {
		e, _ := protojson.Marshal(env)
		r, _ := protojson.Marshal(records[i])
		v.Batch = append(v.Batch, entry{Envelope: e, Record: r})
	}
	want, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	path := filepath.Join(vectors, "envelope-batch.json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	// protojson's spacing varies by build, so compare what the file holds.
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	if g, w := canonical(t, gotV), canonical(t, wantV); !bytes.Equal(g, w) {
		t.Errorf("%s is not what the signer makes today (UPDATE_GOLDEN=1 rewrites it):\n%s\nwant\n%s", path, g, w)
	}
}

// TestEffectVector checks that the single-record vector still opens.
func TestEffectVector(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(vectors, "envelope.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		PublicKey string          `json:"public_key_hex"`
		Envelope  json.RawMessage `json:"envelope"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var env receiptv1.Envelope
	if err := protojson.Unmarshal(v.Envelope, &env); err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(vectorKey().Public().(ed25519.PublicKey)) != v.PublicKey {
		t.Fatal("the vector's key is not the seed 0x01..0x20")
	}
	var r receiptv1.EffectReceipt
	if err := (envelope.Keyring{"action": vectorKey().Public().(ed25519.PublicKey)}).Open(&env, "action", &r); err != nil {
		t.Fatal(err)
	}
}

func canonical(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
