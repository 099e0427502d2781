package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/kernel/minimize"
	"github.com/ambitkernel/ambit/kernel/suite"
	"github.com/spf13/cobra"
)

func minimizeCmd(env *Env) *cobra.Command {
	cmd := leaf("minimize --contract C --episodes E", "run the removal test of --contract over --episodes and print the minimal contract")
	fs := cmd.Flags()
	contractArg := fs.String("contract", "", "contract file or shipped profile to minimise")
	episodesArg := fs.String("episodes", "", `episodes: shipped corpora ("seed", "extended", "self-query", "all") or JSONL files, comma-separated`)
	out := fs.String("out", "", "write the minimal contract (YAML) to FILE; without it the YAML follows the report")
	format := fs.String("format", "text", "report format: text or json")
	nowFlag := fs.String("now", suite.Now.Format(time.RFC3339), "evaluation instant, RFC 3339")
	formats(cmd, "text", "json")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if err := checkFormat(*format); err != nil {
			return err
		}
		if *contractArg == "" || *episodesArg == "" || len(args) > 0 {
			return fmt.Errorf("%w: minimize needs --contract C and --episodes E, and nothing else", ErrUsage)
		}
		now, err := time.Parse(time.RFC3339, *nowFlag)
		if err != nil {
			return fmt.Errorf("%w: --now: %w", ErrUsage, err)
		}
		c, err := loadContract(*contractArg)
		if err != nil {
			return err
		}
		episodes, corpora, err := loadEpisodes(*episodesArg)
		if err != nil {
			return err
		}
		res, err := minimize.Run(c, episodes, now)
		if err != nil {
			return err
		}
		header := fmt.Sprintf("The minimal contract the removal test found for %s over %s:\n"+
			"every legitimate episode ends at least as well, no unsafe one the original\n"+
			"refused is admitted, and no element can go without a legitimate episode\n"+
			"getting worse. Ω %d -> %d.", c.GetContractId(), strings.Join(corpora, ", "), res.Before.Omega, res.After.Omega)
		minimal, err := contractYAML(res.Minimal, header)
		if err != nil {
			return err
		}
		if *out != "" {
			if err := os.WriteFile(*out, minimal, 0o644); err != nil {
				return fmt.Errorf("minimize: %w", err)
			}
		}
		if *format == "json" {
			report := struct {
				*minimize.Result
				Corpora []string `json:"corpora"`
				Minimal any      `json:"minimal_contract"`
			}{Result: res, Corpora: corpora}
			js, err := protoJSON(res.Minimal)
			if err != nil {
				return err
			}
			report.Minimal = rawJSON(js)
			return writeJSON(env.Stdout, report)
		}
		fmt.Fprint(env.Stdout, minimize.Text(res, strings.Join(corpora, ", ")))
		if *out == "" {
			fmt.Fprintf(env.Stdout, "\n%s", minimal)
		} else {
			fmt.Fprintf(env.Stdout, "\nminimal contract written to %s\n", *out)
		}
		return nil
	}
	return cmd
}
