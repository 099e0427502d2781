package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"google.golang.org/protobuf/proto"
)

// hashDomain separates canon content hashes from every other SHA-256 the
// kernel computes, so equal bytes in another role never collide with one.
const hashDomain = "ambit.canon.content.v1"

// ContentHash returns the hex SHA-256 of item's content: the domain, the
// kind's enum name, and the contract or debt record (deterministic protobuf
// encoding) or the text. Metadata (provenance, scope, promotion, ...) is not
// content and is not hashed: it is governed by transitions, not by the hash.
//
// Deterministic protobuf encoding is stable for one protobuf-go version, not
// across all of them; as the seed says, changing canonical bytes requires a
// new version, so the hash is recomputed only when items are re-proposed.
func ContentHash(item *ledgerv1.CanonItem) (string, error) {
	if err := checkContent(item); err != nil {
		return "", err
	}
	var body []byte
	switch item.GetKind() {
	case ledgerv1.ItemKind_ITEM_KIND_CONTRACT:
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(item.GetContract())
		if err != nil {
			return "", fmt.Errorf("hash contract of %q: %w", item.GetCanonItemId(), err)
		}
		body = b
	case ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD:
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(item.GetDebt())
		if err != nil {
			return "", fmt.Errorf("hash debt record of %q: %w", item.GetCanonItemId(), err)
		}
		body = b
	default:
		body = []byte(item.GetText())
	}
	h := sha256.New()
	h.Write([]byte(hashDomain))
	h.Write([]byte{0})
	h.Write([]byte(item.GetKind().String()))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkContent refuses an item whose content does not match its kind, so
// that one kind's content can never hide in another's field.
func checkContent(item *ledgerv1.CanonItem) error {
	switch {
	case item == nil:
		return fmt.Errorf("no item: %w", ErrInvalidItem)
	case item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_UNSPECIFIED:
		return fmt.Errorf("item %q: kind is unspecified: %w", item.GetCanonItemId(), ErrInvalidItem)
	case ledgerv1.ItemKind_name[int32(item.GetKind())] == "":
		return fmt.Errorf("item %q: kind %d is not defined: %w", item.GetCanonItemId(), item.GetKind(), ErrInvalidItem)
	case item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT && item.GetContract() == nil:
		return fmt.Errorf("item %q: a contract item has no contract: %w", item.GetCanonItemId(), ErrInvalidItem)
	case item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_CONTRACT && item.GetText() != "":
		return fmt.Errorf("item %q: a contract item carries text: %w", item.GetCanonItemId(), ErrInvalidItem)
	case item.GetKind() != ledgerv1.ItemKind_ITEM_KIND_CONTRACT && item.GetContract() != nil:
		return fmt.Errorf("item %q: a %s item carries a contract: %w", item.GetCanonItemId(), item.GetKind(), ErrInvalidItem)
	case item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD && item.GetDebt() == nil:
		return fmt.Errorf("item %q: a debt record item has no debt record: %w", item.GetCanonItemId(), ErrInvalidItem)
	case item.GetKind() == ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD && item.GetText() != "":
		return fmt.Errorf("item %q: a debt record item carries text: %w", item.GetCanonItemId(), ErrInvalidItem)
	case item.GetKind() != ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD && item.GetDebt() != nil:
		return fmt.Errorf("item %q: a %s item carries a debt record: %w", item.GetCanonItemId(), item.GetKind(), ErrInvalidItem)
	}
	return nil
}
