package e2e_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/e2e/attack"
	"github.com/ambitkernel/ambit/examples/demo"
	"github.com/ambitkernel/ambit/sdk/devstack"
)

// TestAttack runs the attack harness (package attack) against the four
// processes with both examples: every family of injected instructions,
// planted in a receipt's text and in a customer's message, followed by a
// compromised agent through sdk/client beside a legitimate task. It must
// count zero unauthorised effects, zero leaked values and no refused
// legitimate work, and every family must have been attempted and refused.
//
// `make test` runs one round of every family on each example. `make
// attack` sets AMBIT_ATTACK=1: three rounds, each on fresh records, and
// the table printed; AMBIT_ATTACK=verbose also prints every call.
func TestAttack(t *testing.T) {
	full := os.Getenv("AMBIT_ATTACK") != ""
	st := startStack(t, devstack.Options{Agents: 2}, demo.ExpenseRefund, demo.Supportdesk)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h, err := attack.New(ctx, st.Stack)
	if err != nil {
		t.Fatal(err)
	}
	h.Rounds = 1
	if full {
		h.Rounds = 3
	}
	if os.Getenv("AMBIT_ATTACK") == "verbose" {
		h.Log = os.Stdout
	}
	results, err := h.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	table := attack.Format(results)
	if full {
		fmt.Printf("\nattack harness: %d families x %d examples x %d rounds, against the kernel, the evidence adapter, the action adapter and the verifier\n\n%s",
			len(attack.Families()), len(st.Examples), h.Rounds, table)
	} else {
		t.Logf("\n%s", table)
	}
	if want := len(attack.Families()) * len(st.Examples); len(results) != want {
		t.Fatalf("%d results, want %d", len(results), want)
	}
	for _, r := range results {
		if r.Unauthorised != 0 || r.Leaked != 0 || r.LegitRefused != 0 {
			t.Errorf("%s on %s: %d unauthorised effects, %d leaked values, %d refused legitimate tasks", r.Family.Name, r.Example, r.Unauthorised, r.Leaked, r.LegitRefused)
		}
		if r.Attempts == 0 || r.Refused == 0 || r.Legitimate != h.Rounds {
			t.Errorf("%s on %s: %d attempts, %d refused, %d legitimate tasks: the family did not run", r.Family.Name, r.Example, r.Attempts, r.Refused, r.Legitimate)
		}
	}
	if t.Failed() && !full {
		t.Logf("the table:\n%s", table)
	}
}
