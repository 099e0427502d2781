package canon_test

import (
	"errors"
	"testing"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"

	"github.com/ambitkernel/ambit/kernel/canon"
)

func TestContentHash(t *testing.T) {
	base := policy("POL-1", "limit GBP 500")
	baseHash, err := canon.ContentHash(base)
	if err != nil {
		t.Fatal(err)
	}
	// The pinned value guards the hash format: changing it changes every
	// recorded identity, which needs a new version, not a quiet edit.
	if want := "8bc0da99b9ec543211fb24a041ca26e2e85cbc0a0d8d799956f32890ac5e5587"; baseHash != want {
		t.Errorf("hash = %s, want %s", baseHash, want)
	}
	tests := []struct {
		name     string
		item     *ledgerv1.CanonItem
		wantErr  error
		wantSame bool // same hash as base
	}{
		{name: "metadata is not content", item: policy("POL-2", "limit GBP 500", func(it *ledgerv1.CanonItem) {
			it.Scope = ledgerv1.Scope_SCOPE_SESSION
			it.ProvenanceRef = ""
		}), wantSame: true},
		{name: "text is content", item: policy("POL-1", "limit GBP 501")},
		{name: "kind is content", item: policy("POL-1", "limit GBP 500", func(it *ledgerv1.CanonItem) { it.Kind = ledgerv1.ItemKind_ITEM_KIND_SUMMARY })},
		{name: "contract", item: contractItem("CTR-1", refundContract())},
		{name: "nil", item: nil, wantErr: canon.ErrInvalidItem},
		{name: "no kind", item: policy("POL-1", "x", func(it *ledgerv1.CanonItem) { it.Kind = 0 }), wantErr: canon.ErrInvalidItem},
		{name: "undefined kind", item: policy("POL-1", "x", func(it *ledgerv1.CanonItem) { it.Kind = 99 }), wantErr: canon.ErrInvalidItem},
		{name: "contract item without contract", item: contractItem("CTR-1", nil), wantErr: canon.ErrInvalidItem},
		{name: "contract item with text", item: contractItem("CTR-1", refundContract(), func(it *ledgerv1.CanonItem) { it.Text = "x" }), wantErr: canon.ErrInvalidItem},
		{name: "policy carrying a contract", item: policy("POL-1", "x", func(it *ledgerv1.CanonItem) { it.Contract = refundContract() }), wantErr: canon.ErrInvalidItem},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := canon.ContentHash(tc.item)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if len(h) != 64 {
				t.Errorf("hash %q is not hex SHA-256", h)
			}
			if (h == baseHash) != tc.wantSame {
				t.Errorf("hash %s vs base %s: same=%v, want %v", h, baseHash, h == baseHash, tc.wantSame)
			}
			again, _ := canon.ContentHash(tc.item)
			if again != h {
				t.Errorf("hash not deterministic: %s then %s", h, again)
			}
		})
	}
}
