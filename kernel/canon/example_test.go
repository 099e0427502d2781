package canon_test

import (
	"fmt"
	"time"

	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"

	"github.com/ambitkernel/ambit/kernel/canon"
)

func ExampleReplay() {
	auth := canon.Authorities{ledgerv1.Scope_SCOPE_ORGANISATION: {"policy-owner"}}
	pol := func(id, text, supersedes string) *ledgerv1.CanonItem {
		return &ledgerv1.CanonItem{
			CanonItemId: id, Kind: ledgerv1.ItemKind_ITEM_KIND_POLICY, Text: text,
			SourceOrigin: ledgerv1.SourceOrigin_SOURCE_ORIGIN_POLICY, AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
			ProvenanceRef: "policy-repo:" + id, Scope: ledgerv1.Scope_SCOPE_ORGANISATION,
			Lifetime: ledgerv1.Lifetime_LIFETIME_DURABLE, SupersedesRef: supersedes,
		}
	}
	day := func(d int) time.Time { return time.Date(2026, 9, d, 9, 0, 0, 0, time.UTC) }
	log := []canon.Transition{
		{Kind: canon.Propose, At: day(1), Actor: "policy-owner", Item: pol("POL-2026-08", "limit GBP 800", "")},
		{Kind: canon.Promote, At: day(1), Actor: "policy-owner", ItemID: "POL-2026-08"},
		{Kind: canon.Propose, At: day(10), Actor: "policy-owner", Item: pol("POL-2026-09", "limit GBP 500", "POL-2026-08")},
		{Kind: canon.Promote, At: day(15), Actor: "policy-owner", ItemID: "POL-2026-09"},
		{Kind: canon.Supersede, At: day(15), Actor: "policy-owner", ItemID: "POL-2026-08", OtherID: "POL-2026-09"},
	}
	for _, until := range []time.Time{day(12), day(20)} {
		s, err := canon.Replay(log, until, auth)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, c := range canon.ClassifyAll(s, auth) {
			fmt.Println(until.Format("Jan 2"), c.Item.GetCanonItemId(), c.Class)
		}
	}
	// Output:
	// Sep 12 POL-2026-08 CANON_CLASS_CANONICAL
	// Sep 12 POL-2026-09 CANON_CLASS_PROVISIONAL
	// Sep 20 POL-2026-08 CANON_CLASS_DEPRECATED
	// Sep 20 POL-2026-09 CANON_CLASS_CANONICAL
}

func ExampleState_Apply() {
	auth := canon.Authorities{ledgerv1.Scope_SCOPE_ORGANISATION: {"policy-owner"}}
	var s canon.State
	err := s.Apply(canon.Transition{
		Kind: canon.Propose, At: time.Date(2026, 9, 17, 8, 0, 0, 0, time.UTC), Actor: "tool-adapter",
		Item: &ledgerv1.CanonItem{
			CanonItemId: "TOOL-0917", Kind: ledgerv1.ItemKind_ITEM_KIND_TOOL_OUTPUT, Text: "limit is GBP 2000",
			SourceOrigin: ledgerv1.SourceOrigin_SOURCE_ORIGIN_TOOL, AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_NONE,
			ProvenanceRef: "tool:policy-lookup/run-0917", Scope: ledgerv1.Scope_SCOPE_ORGANISATION,
			Lifetime: ledgerv1.Lifetime_LIFETIME_DURABLE,
		},
	}, auth)
	fmt.Println(err)
	err = s.Apply(canon.Transition{Kind: canon.Promote, At: time.Date(2026, 9, 17, 8, 1, 0, 0, time.UTC), Actor: "tool-adapter", ItemID: "TOOL-0917"}, auth)
	fmt.Println(canon.Code(err))
	r := canon.Classify(&s, "TOOL-0917", auth)
	fmt.Println(r.Class)
	fmt.Println(r.Reasons[0])
	// Output:
	// <nil>
	// not_authorised
	// CANON_CLASS_EXTERNAL_UNTRUSTED
	// SOURCE_ORIGIN_TOOL from outside with AUTHORITY_LEVEL_NONE: no authority to govern SCOPE_ORGANISATION was delegated
}
