package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/ambitkernel/ambit/kernel/contract"
	"github.com/ambitkernel/ambit/kernel/suite"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// loadContract reads a contract file or, when no such file exists, the
// shipped profile of that name.
func loadContract(arg string) (*contractv1.Contract, error) {
	if _, err := os.Stat(arg); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return contract.Load(arg)
	}
	if slices.Contains(contract.ProfileNames(), arg) {
		return contract.Profile(arg)
	}
	return nil, fmt.Errorf("%w: %q is neither a contract file nor a shipped profile (%s)", ErrUsage, arg, strings.Join(contract.ProfileNames(), ", "))
}

// profileNames completes a contract argument: the shipped profiles, or a
// file.
func profileNames(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return contract.ProfileNames(), cobra.ShellCompDirectiveDefault
}

// loadEpisodes reads a comma-separated list of shipped corpora ("seed",
// "extended", "self-query", or "all" for every one) and JSONL files, and
// returns the episodes with the names of what was read.
func loadEpisodes(spec string) ([]suite.Episode, []string, error) {
	var out []suite.Episode
	var names []string
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "all":
			for _, c := range suite.Corpora() {
				eps, err := suite.Load(c)
				if err != nil {
					return nil, nil, err
				}
				out, names = append(out, eps...), append(names, c)
			}
		case slices.Contains(suite.Corpora(), part):
			eps, err := suite.Load(part)
			if err != nil {
				return nil, nil, err
			}
			out, names = append(out, eps...), append(names, part)
		case part != "":
			data, err := os.ReadFile(part)
			if err != nil {
				return nil, nil, fmt.Errorf("load episodes: %w", err)
			}
			eps, err := suite.Parse(part, data)
			if err != nil {
				return nil, nil, err
			}
			out, names = append(out, eps...), append(names, part)
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: --episodes %q names no episode", ErrUsage, spec)
	}
	return out, names, nil
}

// contractYAML renders a contract as YAML that contract.Load reads back.
func contractYAML(c proto.Message, header string) ([]byte, error) {
	js, err := protoJSON(c)
	if err != nil {
		return nil, err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString("# " + line + "\n")
	}
	b.Write(y)
	return []byte(b.String()), nil
}
