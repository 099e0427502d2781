package cli

import (
	"fmt"
	"strings"

	"github.com/ambitkernel/ambit/kernel/debt"
	"github.com/ambitkernel/ambit/kernel/suite"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/spf13/cobra"
)

func debtCmd(env *Env) *cobra.Command {
	cmd := leaf("debt OLD NEW", "the contraction debt of widening OLD into NEW: routes added, families to re-run, review load")
	fs := cmd.Flags()
	episodesArg := fs.String("episodes", "all", `episodes to re-run: shipped corpora ("seed", "extended", "self-query", "all") or JSONL files, comma-separated`)
	format := fs.String("format", "text", "output format: text, json, or record (the ledger's debt record as a canon item to propose)")
	itemID := fs.String("item-id", "", "record: the debt record's canon_item_id")
	oldRef := fs.String("old-ref", "", "record: canon item id of the old contract")
	newRef := fs.String("new-ref", "", "record: canon item id of the new contract")
	decision := fs.String("decision", "", "record: the approver's assurance decision, accepted or refused")
	rationale := fs.String("rationale", "", "record: why the approver decided so")
	scope := fs.String("scope", "SCOPE_ORGANISATION", "record: the item's scope (who may promote it)")
	formats(cmd, "text", "json", "record")
	cmd.ValidArgsFunction = profileNames
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := checkFormatOf(*format, "text", "json", "record"); err != nil {
			return err
		}
		if len(args) != 2 {
			return fmt.Errorf("%w: debt needs OLD and NEW (contract files or shipped profiles)", ErrUsage)
		}
		older, err := loadContract(args[0])
		if err != nil {
			return err
		}
		newer, err := loadContract(args[1])
		if err != nil {
			return err
		}
		episodes, corpora, err := loadEpisodes(*episodesArg)
		if err != nil {
			return err
		}
		d, err := debt.Compute(older, newer, corpora, episodes, suite.Now)
		if err != nil {
			return err
		}
		switch *format {
		case "json":
			return writeJSON(env.Stdout, d)
		case "record":
			item, err := debtItem(d, *itemID, *oldRef, *newRef, *decision, *rationale, *scope)
			if err != nil {
				return err
			}
			y, err := contractYAML(item, fmt.Sprintf("Debt record of widening %s into %s: propose it, and promote it to accept the widening.", older.GetContractId(), newer.GetContractId()))
			if err != nil {
				return err
			}
			_, err = env.Stdout.Write(y)
			return err
		}
		_, err = fmt.Fprint(env.Stdout, debt.Text(d))
		return err
	}
	return cmd
}

func debtItem(d *debt.Debt, id, oldRef, newRef, decision, rationale, scope string) (*ledgerv1.CanonItem, error) {
	if id == "" || oldRef == "" || newRef == "" {
		return nil, fmt.Errorf("%w: --format record needs --item-id, --old-ref and --new-ref", ErrUsage)
	}
	dec, ok := ledgerv1.AssuranceDecision_value["ASSURANCE_DECISION_"+strings.ToUpper(decision)]
	if !ok || dec == 0 {
		return nil, fmt.Errorf("%w: --decision must be accepted or refused, got %q", ErrUsage, decision)
	}
	sc, ok := ledgerv1.Scope_value[scope]
	if !ok || sc == 0 {
		return nil, fmt.Errorf("%w: --scope %q is not a scope", ErrUsage, scope)
	}
	if !d.Routes.Widens() {
		return nil, fmt.Errorf("%s does not widen %s: there is no debt to record", d.Routes.New, d.Routes.Old)
	}
	return &ledgerv1.CanonItem{
		CanonItemId:    id,
		Kind:           ledgerv1.ItemKind_ITEM_KIND_DEBT_RECORD,
		SourceOrigin:   ledgerv1.SourceOrigin_SOURCE_ORIGIN_GOVERNANCE,
		AuthorityLevel: ledgerv1.AuthorityLevel_AUTHORITY_LEVEL_OWNER,
		ProvenanceRef:  "item:" + newRef,
		Scope:          ledgerv1.Scope(sc),
		Lifetime:       ledgerv1.Lifetime_LIFETIME_DURABLE,
		Debt:           debt.Record(d, oldRef, newRef, ledgerv1.AssuranceDecision(dec), rationale),
	}, nil
}
