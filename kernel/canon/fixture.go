package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	ledgerv1 "github.com/ambitkernel/ambit/proto/gen/ambit/ledger/v1"
	"github.com/ambitkernel/ambit/sdk/document"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
)

// Fixture is one ledger scenario as data: the authorities in force, the
// transitions in order (each either accepted or refused with an expected
// code), and the classes every item must have at the end and at optional
// earlier checkpoints.
type Fixture struct {
	Name        string
	Description string
	// Source is the file the fixture was read from, for messages.
	Source      string
	Authorities Authorities
	Steps       []Step
	// Expect is the class of every item at the end. Every recorded item
	// must appear, so a fixture cannot pass by forgetting one.
	Expect map[string]ledgerv1.CanonClass
	// Checkpoints replay the transitions up to an earlier time.
	Checkpoints []Checkpoint
	// ExpectContracts are the contracts items must hold at the end, e.g. a
	// handoff child's filtered contract.
	ExpectContracts map[string]*contractv1.Contract
}

// Step is a transition of a fixture and the refusal it must meet: a Code,
// or "" when the ledger must accept it.
type Step struct {
	Transition
	ExpectError string
}

// Checkpoint is the expected class of some items after replaying the
// transitions at or before At.
type Checkpoint struct {
	At     time.Time
	Expect map[string]ledgerv1.CanonClass
}

// FixtureResult is the outcome of Run: every step, item and contract
// checked, each with its own verdict, and Pass when all pass.
type FixtureResult struct {
	Name      string
	Steps     []StepResult
	Items     []ItemResult
	Contracts []ContractResult
	Pass      bool
}

// StepResult is one transition: the refusal expected and the one met.
type StepResult struct {
	Index       int
	Kind        TransitionKind
	ExpectError string
	// GotError is Code of the refusal, "" when accepted.
	GotError string
	// Err is the refusal's text, "" when accepted.
	Err  string
	Pass bool
}

// ItemResult is one item's expected and computed class at one time.
type ItemResult struct {
	// At is the checkpoint time; zero means the end of the fixture.
	At       time.Time
	ID       string
	Expected ledgerv1.CanonClass
	Computed ledgerv1.CanonClass
	Reasons  []string
	Pass     bool
}

// ContractResult is one expected contract.
type ContractResult struct {
	ID   string
	Pass bool
	// Diff is empty on a pass and shows the difference on a failure.
	Diff string
}

// Run plays f against an empty ledger and checks every expectation. It
// never stops at the first failure: the result reports them all.
func Run(f Fixture) FixtureResult {
	res := FixtureResult{Name: f.Name, Pass: true}
	s := &State{}
	for i, st := range f.Steps {
		err := s.Apply(st.Transition, f.Authorities)
		sr := StepResult{Index: i, Kind: st.Kind, ExpectError: st.ExpectError, GotError: Code(err)}
		if err != nil {
			sr.Err = err.Error()
			if sr.GotError == "" {
				sr.GotError = "error"
			}
		}
		sr.Pass = sr.GotError == st.ExpectError
		res.Steps = append(res.Steps, sr)
		res.Pass = res.Pass && sr.Pass
	}

	final := checkClasses(s, time.Time{}, f.Expect, f.Authorities)
	for _, id := range s.IDs() {
		if _, ok := f.Expect[id]; !ok {
			final = append(final, ItemResult{ID: id, Computed: Classify(s, id, f.Authorities).Class,
				Reasons: []string{"the fixture sets no expectation for this item"}})
		}
	}
	for _, cp := range f.Checkpoints {
		// Replay from empty so that the checkpoint sees the ledger exactly
		// as it stood then; refusals were already checked above.
		past := &State{}
		for _, st := range f.Steps {
			if st.At.After(cp.At) {
				break
			}
			_ = past.Apply(st.Transition, f.Authorities)
		}
		final = append(final, checkClasses(past, cp.At, cp.Expect, f.Authorities)...)
	}
	for _, ir := range final {
		res.Pass = res.Pass && ir.Pass
	}
	res.Items = final

	for _, id := range sortedKeys(f.ExpectContracts) {
		cr := ContractResult{ID: id}
		item, ok := s.Item(id)
		if !ok {
			cr.Diff = fmt.Sprintf("no item %q in the ledger", id)
		} else if d := cmp.Diff(f.ExpectContracts[id], item.GetContract(), protocmp.Transform()); d != "" {
			cr.Diff = "(-want +got)\n" + d
		}
		cr.Pass = cr.Diff == ""
		res.Contracts = append(res.Contracts, cr)
		res.Pass = res.Pass && cr.Pass
	}
	return res
}

// checkClasses classifies the ids of want, in ledger order and then by id
// for those the ledger lacks, so that results are deterministic.
func checkClasses(s *State, at time.Time, want map[string]ledgerv1.CanonClass, auth Authorities) []ItemResult {
	var ids []string
	for _, id := range s.IDs() {
		if _, ok := want[id]; ok {
			ids = append(ids, id)
		}
	}
	for _, id := range sortedKeys(want) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	out := make([]ItemResult, 0, len(ids))
	for _, id := range ids {
		r := Classify(s, id, auth)
		out = append(out, ItemResult{At: at, ID: id, Expected: want[id], Computed: r.Class, Reasons: r.Reasons, Pass: r.Class == want[id]})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The file form of a fixture. YAML is converted to JSON first, so that
// items, filters and contracts are read by protojson with enum names, and
// unknown fields are refused at every level.
type fixtureFile struct {
	Name            string                     `json:"name"`
	Description     string                     `json:"description"`
	Authorities     map[string][]string        `json:"authorities"`
	Transitions     []transitionFile           `json:"transitions"`
	Expect          map[string]string          `json:"expect"`
	Checkpoints     []checkpointFile           `json:"checkpoints"`
	ExpectContracts map[string]json.RawMessage `json:"expect_contracts"`
}

type transitionFile struct {
	Kind        string          `json:"kind"`
	At          string          `json:"at"`
	Actor       string          `json:"actor"`
	Item        json.RawMessage `json:"item"`
	ItemID      string          `json:"item_id"`
	OtherID     string          `json:"other_id"`
	Filter      json.RawMessage `json:"filter"`
	Note        string          `json:"note"`
	ExpectError string          `json:"expect_error"`
}

type checkpointFile struct {
	At     string            `json:"at"`
	Expect map[string]string `json:"expect"`
}

// ParseFixture decodes one fixture file. It is strict: unknown fields,
// duplicate keys, unknown enum names, transition kinds and refusal codes are
// all errors, because a typo in a conformance fixture must not pass quietly.
func ParseFixture(data []byte) (Fixture, error) {
	var ff fixtureFile
	if err := document.Decode(data, &ff); err != nil {
		return Fixture{}, fmt.Errorf("parse fixture: %w", err)
	}
	if ff.Name == "" {
		return Fixture{}, fmt.Errorf("parse fixture: no name")
	}
	f := Fixture{Name: ff.Name, Description: ff.Description, Authorities: Authorities{}}
	fail := func(format string, args ...any) (Fixture, error) {
		return Fixture{}, fmt.Errorf("parse fixture %q: %s", ff.Name, fmt.Sprintf(format, args...))
	}
	for name, principals := range ff.Authorities {
		scope, ok := ledgerv1.Scope_value[name]
		if !ok || scope == 0 {
			return fail("authorities: unknown scope %q", name)
		}
		f.Authorities[ledgerv1.Scope(scope)] = principals
	}
	if len(ff.Transitions) == 0 {
		return fail("no transitions")
	}
	for i, tf := range ff.Transitions {
		st, err := parseStep(tf)
		if err != nil {
			return fail("transition %d: %v", i, err)
		}
		f.Steps = append(f.Steps, st)
	}
	if len(ff.Expect) == 0 {
		return fail("no expect")
	}
	var err error
	if f.Expect, err = parseClasses(ff.Expect); err != nil {
		return fail("expect: %v", err)
	}
	for i, cf := range ff.Checkpoints {
		at, err := time.Parse(time.RFC3339, cf.At)
		if err != nil {
			return fail("checkpoint %d: %v", i, err)
		}
		want, err := parseClasses(cf.Expect)
		if err != nil {
			return fail("checkpoint %d: %v", i, err)
		}
		if len(want) == 0 {
			return fail("checkpoint %d: no expect", i)
		}
		f.Checkpoints = append(f.Checkpoints, Checkpoint{At: at, Expect: want})
	}
	for id, raw := range ff.ExpectContracts {
		c := &contractv1.Contract{}
		if err := protojson.Unmarshal(raw, c); err != nil {
			return fail("expect_contracts %q: %v", id, err)
		}
		if f.ExpectContracts == nil {
			f.ExpectContracts = map[string]*contractv1.Contract{}
		}
		f.ExpectContracts[id] = c
	}
	return f, nil
}

func parseStep(tf transitionFile) (Step, error) {
	kind, err := ParseTransitionKind(tf.Kind)
	if err != nil {
		return Step{}, err
	}
	at, err := time.Parse(time.RFC3339, tf.At)
	if err != nil {
		return Step{}, fmt.Errorf("at: %w", err)
	}
	if tf.ExpectError != "" && !knownCode(tf.ExpectError) {
		return Step{}, fmt.Errorf("expect_error %q is not a refusal code", tf.ExpectError)
	}
	st := Step{Transition: Transition{Kind: kind, At: at, Actor: tf.Actor, ItemID: tf.ItemID, OtherID: tf.OtherID, Note: tf.Note}, ExpectError: tf.ExpectError}
	if present(tf.Item) {
		st.Item = &ledgerv1.CanonItem{}
		if err := protojson.Unmarshal(tf.Item, st.Item); err != nil {
			return Step{}, fmt.Errorf("item: %w", err)
		}
	}
	if present(tf.Filter) {
		st.Filter = &ledgerv1.HandoffFilter{}
		if err := protojson.Unmarshal(tf.Filter, st.Filter); err != nil {
			return Step{}, fmt.Errorf("filter: %w", err)
		}
	}
	return st, nil
}

// present reports whether a field was given a value; an explicit null is
// treated as absent.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func parseClasses(in map[string]string) (map[string]ledgerv1.CanonClass, error) {
	out := make(map[string]ledgerv1.CanonClass, len(in))
	for id, name := range in {
		v, ok := ledgerv1.CanonClass_value[name]
		if !ok || v == 0 {
			return nil, fmt.Errorf("item %q: unknown class %q", id, name)
		}
		out[id] = ledgerv1.CanonClass(v)
	}
	return out, nil
}
