package devstack

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ambitkernel/ambit/sdk/document"
)

// ManifestFile is the name of an example's manifest in its folder.
const ManifestFile = "example.yaml"

// The placeholders a launcher gives values to, written ${NAME} in an
// example's commands and files.
const (
	// VarData is the stack's data folder, shared by every example.
	VarData = "DATA"
	// VarDir is the stack's folder.
	VarDir = "DIR"
	// VarAddrFile is, in a server's command only, the file the server
	// writes its addresses to (a JSON object).
	VarAddrFile = "ADDR_FILE"
)

// Example is one example domain as its manifest declares it: what to run
// before the stack starts, the upstream servers it needs, and its four
// files.
//
//	setup:                      # commands run to completion, in order
//	  - [make-data, --dir, "${DATA}"]
//	servers:                    # long-running, started before the stack
//	  - name: upstream-mcp
//	    command: [upstream-mcp, --db, "${DATA}/upstream.db", --addr-file, "${ADDR_FILE}"]
//	    addresses: {UPSTREAM_URL: mcp}   # placeholder: key of the address file
//	files:                      # relative to the manifest's folder
//	  contract: contract.yaml   # the contract template governance binds tasks to
//	  evidence: evidence.yaml   # the evidence adapter's `sources`
//	  action: action.yaml       # the action adapter's `database`, `state_checks`, `executors`
//	  verifier: verifier.yaml   # the verifier's `readbacks`
//
// A command's first word names a program in the launcher's bin folder.
type Example struct {
	// Name is the example's folder name.
	Name string `json:"-"`
	// Dir is the example's folder, absolute.
	Dir string `json:"-"`
	// Setup are commands run to completion, in order, before any server.
	Setup [][]string `json:"setup"`
	// Servers are started before the stack and stopped after it.
	Servers []Server `json:"servers"`
	// Files name the example's files, relative to Dir.
	Files Files `json:"files"`
}

// Server is an upstream system an example's connectors reach.
type Server struct {
	// Name is the process's name in the stack (its log is
	// logs/<name>.log); unique in the stack.
	Name string `json:"name"`
	// Command starts the server; ${ADDR_FILE} is where it must write its
	// addresses once it serves.
	Command []string `json:"command"`
	// Addresses maps a placeholder of the example's files to the key of
	// the address file whose value it takes, e.g. {UPSTREAM_URL: mcp}.
	Addresses map[string]string `json:"addresses"`
}

// Files are an example's four files, relative to its folder. Contract is
// required; the others hold the sections merged into the adapters' and the
// verifier's configurations.
type Files struct {
	Contract string `json:"contract"`
	Evidence string `json:"evidence"`
	Action   string `json:"action"`
	Verifier string `json:"verifier"`
}

// Path returns the absolute path of one of the example's files.
func (e *Example) Path(file string) string { return filepath.Join(e.Dir, file) }

var (
	// namePattern keeps process names usable as file names.
	namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	// varPattern is the shape of a placeholder's name.
	varPattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,62}$`)
)

// LoadExample reads an example's manifest: path is the manifest or the
// folder holding it. Every problem is reported at once, each naming its
// key path.
func LoadExample(path string) (*Example, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("example %s: %w", path, err)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		abs = filepath.Join(abs, ManifestFile)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("example: %w", err)
	}
	var e Example
	if err := document.Decode(data, &e); err != nil {
		return nil, fmt.Errorf("example %s: %w", abs, err)
	}
	e.Dir = filepath.Dir(abs)
	e.Name = filepath.Base(e.Dir)
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("example %s: %w", abs, err)
	}
	return &e, nil
}

// reserved are names no example's server may have: the shared
// topology's processes. Start also refuses a server named as a per-agent
// sidecar of the stack.
var reserved = []string{Kernel, Evidence, Action, Verifier}

func (e *Example) validate() error {
	var errs []error
	if !namePattern.MatchString(e.Name) {
		errs = append(errs, fmt.Errorf("the folder name %q is not a usable example name (a-z, 0-9, '-', '_')", e.Name))
	}
	for i, c := range e.Setup {
		errs = append(errs, checkCommand(fmt.Sprintf("setup[%d]", i), c, []string{VarData, VarDir})...)
	}
	for i, s := range e.Servers {
		path := fmt.Sprintf("servers[%d]", i)
		if !namePattern.MatchString(s.Name) || slices.Contains(reserved, s.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %q is not a usable process name (a-z, 0-9, '-', '_'; not one of %s)", path, s.Name, strings.Join(reserved, ", ")))
		}
		if slices.IndexFunc(e.Servers, func(o Server) bool { return o.Name == s.Name }) < i {
			errs = append(errs, fmt.Errorf("%s.name: %q is repeated", path, s.Name))
		}
		errs = append(errs, checkCommand(path+".command", s.Command, []string{VarData, VarDir, VarAddrFile})...)
		if len(s.Addresses) == 0 {
			errs = append(errs, fmt.Errorf("%s.addresses: name at least one placeholder the server's address file gives", path))
		}
		for _, v := range slices.Sorted(maps.Keys(s.Addresses)) {
			key := s.Addresses[v]
			if !varPattern.MatchString(v) || v == VarData || v == VarDir || v == VarAddrFile {
				errs = append(errs, fmt.Errorf("%s.addresses.%s: not a placeholder name of its own (A-Z, 0-9, '_'; not %s, %s or %s)", path, v, VarData, VarDir, VarAddrFile))
			}
			if key == "" {
				errs = append(errs, fmt.Errorf("%s.addresses.%s: the address file's key is empty", path, v))
			}
		}
	}
	if e.Files.Contract == "" {
		errs = append(errs, errors.New("files.contract is required"))
	}
	for _, file := range []struct{ key, path string }{
		{"contract", e.Files.Contract}, {"evidence", e.Files.Evidence}, {"action", e.Files.Action}, {"verifier", e.Files.Verifier},
	} {
		key, f := file.key, file.path
		if f == "" {
			continue
		}
		if filepath.IsAbs(f) || !filepath.IsLocal(f) {
			errs = append(errs, fmt.Errorf("files.%s: %q is not a path inside the example's folder", key, f))
			continue
		}
		if _, err := os.Stat(e.Path(f)); err != nil {
			errs = append(errs, fmt.Errorf("files.%s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// checkCommand checks a command: a program name from the bin folder and
// arguments using only the placeholders allowed.
func checkCommand(path string, cmd []string, allowed []string) []error {
	if len(cmd) == 0 {
		return []error{fmt.Errorf("%s: an empty command", path)}
	}
	var errs []error
	if p := cmd[0]; p == "" || strings.ContainsAny(p, `/\`) || strings.Contains(p, "$") {
		errs = append(errs, fmt.Errorf("%s[0]: %q is not a program name (a command runs a program of the bin folder)", path, p))
	}
	for i, arg := range cmd[1:] {
		for _, v := range placeholders(arg) {
			if !slices.Contains(allowed, v) {
				errs = append(errs, fmt.Errorf("%s[%d]: ${%s} has no value here (have ${%s})", path, i+1, v, strings.Join(allowed, "}, ${")))
			}
		}
	}
	return errs
}

// placeholders lists the names of the placeholders in s, in order.
func placeholders(s string) []string {
	var out []string
	os.Expand(s, func(k string) string {
		out = append(out, k)
		return ""
	})
	return out
}

// expand replaces every ${NAME} in s with vars[NAME]. A placeholder
// without a value is an error naming it, and so is a value that would
// break out of the quoted YAML string it goes into.
func expand(s string, vars map[string]string) (string, error) {
	var missing []string
	out := os.Expand(s, func(k string) string {
		v, ok := vars[k]
		if !ok && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for ${%s}", strings.Join(missing, "}, ${"))
	}
	for _, k := range placeholders(s) {
		if strings.ContainsAny(vars[k], "\"\\\n\r") {
			return "", fmt.Errorf("the value of ${%s} may not contain quotes, backslashes or line breaks", k)
		}
	}
	return out, nil
}

// FindExamples returns the folders under dir that hold a manifest, sorted.
func FindExamples(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("find examples: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(p, ManifestFile)); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}
