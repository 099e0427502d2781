package examples_test

import (
	"os"
	"slices"
	"testing"

	"github.com/ambitkernel/ambit/examples"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/google/go-cmp/cmp"
)

// TestManifests loads every domain's example.yaml as the launcher does:
// each names the domain's four files, and its commands and servers give
// every placeholder the files use.
func TestManifests(t *testing.T) {
	found, err := devstack.FindExamples(".")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(examples.Domains(), found); diff != "" {
		t.Errorf("folders with a manifest (-domains +found):\n%s", diff)
	}
	tests := []struct {
		domain   string
		programs []string
		vars     []string // what the servers' addresses provide
	}{
		{domain: examples.ExpenseRefund, programs: []string{"refund-data"}},
		{domain: examples.Supportdesk, programs: []string{"supportdesk-mcp"}, vars: []string{examples.SupportdeskURL}},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			e, err := devstack.LoadExample(tt.domain)
			if err != nil {
				t.Fatal(err)
			}
			want := devstack.Files{Contract: examples.ContractFile, Evidence: examples.EvidenceFile, Action: examples.ActionFile, Verifier: examples.VerifierFile}
			if diff := cmp.Diff(want, e.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			var programs, vars []string
			for _, c := range e.Setup {
				programs = append(programs, c[0])
			}
			for _, s := range e.Servers {
				programs = append(programs, s.Command[0])
				for v := range s.Addresses {
					vars = append(vars, v)
				}
			}
			slices.Sort(vars)
			if diff := cmp.Diff(tt.programs, programs); diff != "" {
				t.Errorf("programs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.vars, vars); diff != "" {
				t.Errorf("placeholders from servers (-want +got):\n%s", diff)
			}
			// The launcher gives ${DATA} and ${DIR}; the servers the rest.
			given := append([]string{examples.Data, devstack.VarDir}, vars...)
			for _, f := range []string{examples.EvidenceFile, examples.ActionFile, examples.VerifierFile} {
				data, err := os.ReadFile(e.Path(f))
				if err != nil {
					t.Fatal(err)
				}
				os.Expand(string(data), func(k string) string {
					if !slices.Contains(given, k) {
						t.Errorf("%s/%s uses ${%s}, which nothing gives", tt.domain, f, k)
					}
					return ""
				})
			}
		})
	}
}
