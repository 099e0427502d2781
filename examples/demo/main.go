package demo

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	"github.com/ambitkernel/ambit/sdk/devstack"
	"github.com/ambitkernel/ambit/sdk/version"
)

// Main is the ambit-demo command: it starts the stack with the
// expense-refund and supportdesk examples on loopback in a temporary
// folder, tells both stories, checks the kernel's log and stops
// everything. It returns an error unless every step happened as
// expected.
func Main(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("ambit-demo", flag.ContinueOnError)
	fs.SetOutput(out)
	bin := fs.String("bin", "bin", "folder holding the ambit binaries and the examples' programs")
	examples := fs.String("examples", "", "folder holding the examples (default: the bin folder's ../examples)")
	keep := fs.Bool("keep", false, "keep the working folder (databases, configurations, logs)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(out, version.String("ambit-demo"))
		return err
	}
	binDir, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	if *examples == "" {
		*examples = filepath.Join(filepath.Dir(binDir), "examples")
	}
	dir, err := os.MkdirTemp("", "ambit-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if *keep || err != nil {
			fmt.Fprintf(out, "\nworking folder kept: %s (logs in %s)\n", dir, filepath.Join(dir, "logs"))
			return
		}
		_ = os.RemoveAll(dir)
	}()
	start := time.Now()
	fmt.Fprintf(out, "starting the kernel, the evidence adapter, the action adapter, the verifier and the support desk on loopback (in %s)\n", dir)
	st, err := devstack.Start(ctx, devstack.Options{Dir: dir, BinDir: binDir,
		Examples: []string{filepath.Join(*examples, ExpenseRefund), filepath.Join(*examples, Supportdesk)}})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := st.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		} else {
			fmt.Fprintln(out, "every process stopped cleanly")
		}
	}()
	fmt.Fprintf(out, "kernel agent %s, adapter %s, governance %s; evidence %s; action %s; verifier %s\n",
		st.Kernel.Agent, st.Kernel.Adapter, st.Kernel.Governance, st.Info.Evidence, st.Info.Action, st.Info.Verifier)
	metrics := "http://" + st.Addr(devstack.Kernel, "metrics") + "/metrics"
	before, err := decisionCounters(ctx, metrics)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the kernel's metrics: curl %s\n", metrics)
	s, err := NewStory(ctx, st, filepath.Join(binDir, "ambitctl"), out)
	if err != nil {
		return err
	}
	defer s.Close()
	storyErr := s.Run(ctx)
	after, err := decisionCounters(ctx, metrics)
	if err != nil {
		return errors.Join(storyErr, err)
	}
	s.printf("\n")
	s.expect(after.total() > before.total(), "the kernel's decision counters moved: %s → %s", before, after)
	if storyErr != nil {
		fmt.Fprintf(out, "\n%v\n", storyErr)
	}
	conn, err := st.Conn(ctx, st.Kernel.Governance, devstack.Governance)
	if err != nil {
		return errors.Join(storyErr, err)
	}
	v, err := kernelv1.NewGovernanceServiceClient(conn).VerifyLog(ctx, &kernelv1.VerifyLogRequest{})
	if err != nil {
		return errors.Join(storyErr, err)
	}
	s.printf("\n")
	s.expect(v.GetOk(), "the kernel's tamper-evident log verifies: %d entries, head %.16s…", v.GetEntries(), v.GetHead())
	fmt.Fprintf(out, "\nthe demo took %s\n", time.Since(start).Round(time.Millisecond))
	if len(s.Failures()) > 0 {
		return fmt.Errorf("demo failed: %d expectations did not hold", len(s.Failures()))
	}
	fmt.Fprintln(out, "every step happened as expected")
	return nil
}

// counters are the kernel's ambit_decisions_total by outcome.
type counters map[string]float64

func (c counters) total() (n float64) {
	for _, v := range c {
		n += v
	}
	return n
}

func (c counters) String() string {
	return fmt.Sprintf("allow %g, review %g, deny %g", c["allow"], c["review"], c["deny"])
}

// decisionCounters reads the kernel's decision counters from its metrics
// listener, as curl would.
func decisionCounters(ctx context.Context, url string) (counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the kernel's metrics: %w", err)
	}
	defer resp.Body.Close()
	out := counters{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `ambit_decisions_total{outcome="`)
		if !ok {
			continue
		}
		outcome, value, _ := strings.Cut(rest, `"} `)
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("read the kernel's metrics: %q: %w", line, err)
		}
		out[outcome] = v
	}
	return out, sc.Err()
}
