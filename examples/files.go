package examples

import (
	"embed"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

//go:embed expense-refund/*.yaml supportdesk/*.yaml
var files embed.FS

// The example domains, each a folder of this module.
const (
	ExpenseRefund = "expense-refund"
	Supportdesk   = "supportdesk"
)

// The files every domain has.
const (
	// ContractFile is the contract template. Whoever binds a task fills in
	// binding.task_id, binding.record.key (both "TEMPLATE") and
	// binding.valid_until.
	ContractFile = "contract.yaml"
	// EvidenceFile holds the evidence adapter's `sources`.
	EvidenceFile = "evidence.yaml"
	// ActionFile holds the action adapter's `database`, `state_checks` and
	// `executors`.
	ActionFile = "action.yaml"
	// VerifierFile holds the verifier's `readbacks`.
	VerifierFile = "verifier.yaml"
)

// The placeholders of the configuration files, written ${NAME}.
const (
	// Data is the data folder: expense-refund's claims.db and payments.db
	// (see refunddata.Create), and each domain's action.db.
	Data = "DATA"
	// SupportdeskURL is the desk's MCP endpoint, as supportdesk-mcp
	// writes it to its --addr-file under "mcp".
	SupportdeskURL = "SUPPORTDESK_URL"
)

// Domains lists the example domains.
func Domains() []string { return []string{ExpenseRefund, Supportdesk} }

// File returns one of a domain's files as shipped.
func File(domain, name string) ([]byte, error) {
	if !slices.Contains(Domains(), domain) {
		return nil, fmt.Errorf("example %q: no such domain (have %s)", domain, strings.Join(Domains(), ", "))
	}
	data, err := files.ReadFile(path.Join(domain, name))
	if err != nil {
		return nil, fmt.Errorf("example %s: %w", domain, err)
	}
	return data, nil
}

// Expand returns a domain's file with every ${NAME} replaced by vars[NAME]
// (os.Expand). A placeholder without a value is an error naming it, and so
// is a value that would break out of the quoted YAML string it goes into.
func Expand(domain, name string, vars map[string]string) ([]byte, error) {
	data, err := File(domain, name)
	if err != nil {
		return nil, err
	}
	var missing []string
	out := os.Expand(string(data), func(k string) string {
		v, ok := vars[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("example %s/%s: no value for ${%s}", domain, name, strings.Join(missing, "}, ${"))
	}
	for k, v := range vars {
		if strings.ContainsAny(v, "\"\\\n\r") {
			return nil, fmt.Errorf("example %s/%s: the value of ${%s} may not contain quotes, backslashes or line breaks", domain, name, k)
		}
	}
	return []byte(out), nil
}
