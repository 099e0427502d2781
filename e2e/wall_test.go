package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ambitkernel/ambit/sdk/devstack"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// wallWindow is what the processes' metrics said just before and just
// after a window of calls at one in flight, with the calls that ended in
// it and its length. The calls are back to back, so a call's time as the
// client sees it is the window's length over the calls.
type wallWindow struct {
	calls         int64
	length        time.Duration
	before, after map[string]map[string]*dto.MetricFamily // by process
}

// stackMetrics are the metrics listeners of st's processes procs
// (devstack's names), by name.
func stackMetrics(st *stack, procs ...string) map[string]string {
	m := map[string]string{}
	for _, p := range procs {
		m[p] = st.Addr(p, "metrics")
	}
	return m
}

// wallUnder runs op at one in flight for about d, and reads the metrics
// of the processes at metrics (by name) just before and after.
func wallUnder(ctx context.Context, metrics map[string]string, d time.Duration, op func(i int) error) (wallWindow, error) {
	w := wallWindow{before: map[string]map[string]*dto.MetricFamily{}, after: map[string]map[string]*dto.MetricFamily{}}
	read := func(into map[string]map[string]*dto.MetricFamily) error {
		for proc, addr := range metrics {
			m, err := scrapeMetrics(ctx, addr)
			if err != nil {
				return fmt.Errorf("%s: %w", proc, err)
			}
			into[proc] = m
		}
		return nil
	}
	var err error
	w.calls, err = underLoad(1, op, func() error {
		t0 := time.Now()
		if err := read(w.before); err != nil {
			return err
		}
		time.Sleep(d)
		err := read(w.after)
		w.length = time.Since(t0)
		return err
	})
	if err == nil && w.calls == 0 {
		err = fmt.Errorf("no call ended in %s", d)
	}
	return w, err
}

// call is a call's time as the client saw it, in µs.
func (w wallWindow) call() float64 { return float64(w.length.Microseconds()) / float64(w.calls) }

// grew is, per call, what histogram name of proc grew by over the window
// (its series whose labels include labels): its sum in µs and its count.
func (w wallWindow) grew(proc, name string, labels map[string]string) (µs, count float64) {
	sum, n := histogramDelta(w.before[proc], w.after[proc], name, labels)
	return sum * 1e6 / float64(w.calls), float64(n) / float64(w.calls)
}

// background are the methods called outside any call of the loop: the
// evidence adapter's watcher polls the kernel for the records to watch.
var background = []map[string]string{{"grpc_method": "WatchedRecords"}}

// handled is proc's time per call in its handlers of service's method, or
// in every handler but the health checks' and the background's when
// method is empty; its interceptors are inside that time.
func (w wallWindow) handled(proc, service, method string) float64 {
	const name = "grpc_server_handling_seconds"
	if method != "" {
		µs, _ := w.grew(proc, name, map[string]string{"grpc_service": service, "grpc_method": method})
		return µs
	}
	return w.grewBut(proc, name, append([]map[string]string{{"grpc_service": "grpc.health.v1.Health"}}, background...))
}

// own is proc's time per call in its handlers less the gRPC calls it made
// from them: its own work, its store, and the HTTP calls it makes.
func (w wallWindow) own(proc string) float64 {
	return w.handled(proc, "", "") - w.grewBut(proc, "grpc_client_handling_seconds", background)
}

// grewBut is, per call, what histogram name of proc grew by in µs, less
// its series that match any of but.
func (w wallWindow) grewBut(proc, name string, but []map[string]string) float64 {
	all, _ := w.grew(proc, name, nil)
	for _, labels := range but {
		µs, _ := w.grew(proc, name, labels)
		all -= µs
	}
	return all
}

// commits are the kernel's store's COMMITs per call, and their time in
// µs: the database's writes and, at durability full, its syncs.
func (w wallWindow) commits() (µs, n float64) {
	return w.grew(devstack.Kernel, "ambit_store_commit_seconds", nil)
}

// scrapeMetrics reads a process's Prometheus metrics.
func scrapeMetrics(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// The text format: what the parser reads.
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// histogramDelta is how much a histogram's sum and count grew from before
// to after, over its series whose labels include labels.
func histogramDelta(before, after map[string]*dto.MetricFamily, name string, labels map[string]string) (sum float64, count uint64) {
	s0, c0 := histogramTotal(before[name], labels)
	s1, c1 := histogramTotal(after[name], labels)
	return s1 - s0, c1 - c0
}

func histogramTotal(f *dto.MetricFamily, labels map[string]string) (sum float64, count uint64) {
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		matches := true
		for k, v := range labels {
			matches = matches && have[k] == v
		}
		if matches {
			sum += m.GetHistogram().GetSampleSum()
			count += m.GetHistogram().GetSampleCount()
		}
	}
	return sum, count
}

// The agent service and the health service, as gRPC's metrics label
// them.
const agentService, healthService = "ambit.agent.v1.AgentService", "grpc.health.v1.Health"

// preparedProc names the prepared-reply process in a wallWindow.
const preparedProc = "prepared"

// wallCalls are the windows of single calls printWall compares: a
// no-op, the prepared reply, the prepared reply held as long as the
// decision's handler took (hold), and the decision.
type wallCalls struct {
	noop, prepared, held, decision wallWindow
	hold                           time.Duration
}

// handlerTimes are, in µs a call, the no-op's, the prepared replies' and
// the decision's time in their handlers.
func (c wallCalls) handlerTimes() [4]float64 {
	return [4]float64{
		c.noop.handled(devstack.Kernel, healthService, "Check"),
		c.prepared.handled(preparedProc, agentService, "SubmitProposal"),
		c.held.handled(preparedProc, agentService, "SubmitProposal"),
		c.decision.handled(devstack.Kernel, agentService, "SubmitProposal"),
	}
}

// printWall prints where a no-op's, a prepared reply's and a decision's
// wall time go at one in flight, and a whole loop's.
func printWall(durability string, d time.Duration, calls wallCalls, loop wallWindow) {
	row := func(name string, format string, vs ...float64) {
		fmt.Printf("%-66s", name)
		for _, v := range vs {
			fmt.Printf(" "+format, v)
		}
		fmt.Println()
	}
	fmt.Printf("%-66s %13s %13s %13s %13s\n", fmt.Sprintf("wall time a call at 1 in flight, durability %s (µs, means over %s)", durability, d),
		"no-op", "prepared", fmt.Sprintf("held %dµs", calls.hold.Microseconds()), "decision")
	windows := []wallWindow{calls.noop, calls.prepared, calls.held, calls.decision}
	var end, commit, commits, outside [4]float64
	in := calls.handlerTimes()
	for i, w := range windows {
		end[i] = w.call()
		commit[i], commits[i] = w.commits()
		outside[i] = end[i] - in[i]
	}
	row("the client's call, end to end", "%13.0f", end[:]...)
	row("in the handler (the kernel's or the prepared reply's), interceptors", "%13.0f", in[:]...)
	row("  of it or beside it, the kernel's COMMITs: writes and, at full, sync", "%13.0f", commit[:]...)
	row("  COMMITs a call (the call's own, and the background's)", "%13.2f", commits[:]...)
	row("outside the handler: the client, transport, decoding, encoding", "%13.0f", outside[:]...)

	fmt.Printf("%-66s %13s\n", fmt.Sprintf("the whole loop at 1 in flight, durability %s (µs a loop)", durability), "loop")
	loopCommit, loopCommits := loop.commits()
	rest := loop.call()
	row("the client's loop, end to end", "%13.0f", loop.call())
	for _, p := range []struct{ proc, name string }{
		{devstack.Kernel, "in the kernel's handlers"},
		{devstack.Evidence, "in the evidence adapter's, less its calls to the kernel"},
		{devstack.Action, "in the action adapter's, less its gRPC calls (its HTTP stays)"},
		{devstack.Verifier, "in the verifier's, less its calls to the kernel"},
	} {
		own := loop.own(p.proc)
		rest -= own
		row(p.name, "%13.0f", own)
		if p.proc == devstack.Kernel {
			row(fmt.Sprintf("  of it or beside it, its store's %.2f COMMITs", loopCommits), "%13.0f", loopCommit)
		}
	}
	row("the rest: the client's own work, and every hop's transport", "%13.0f", rest)
}

// parseMetrics parses a scrape in the text format.
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// TestHistogramDelta reads the growth of a histogram's series that match
// labels, from two scrapes in the text format.
func TestHistogramDelta(t *testing.T) {
	parse := func(text string) map[string]*dto.MetricFamily { return parseMetrics(t, text) }
	const format = `# TYPE h histogram
h_bucket{m="a",le="+Inf"} %d
h_sum{m="a"} %g
h_count{m="a"} %d
h_bucket{m="b",le="+Inf"} 7
h_sum{m="b"} 9
h_count{m="b"} 7
`
	before, after := parse(fmt.Sprintf(format, 2, 0.5, 2)), parse(fmt.Sprintf(format, 5, 2.0, 5))
	if sum, n := histogramDelta(before, after, "h", map[string]string{"m": "a"}); sum != 1.5 || n != 3 {
		t.Errorf("series a grew by %g over %d, want 1.5 over 3", sum, n)
	}
	if sum, n := histogramDelta(before, after, "h", nil); sum != 1.5 || n != 3 {
		t.Errorf("every series grew by %g over %d, want 1.5 over 3", sum, n)
	}
	if sum, n := histogramDelta(before, after, "missing", nil); sum != 0 || n != 0 {
		t.Errorf("a missing histogram grew by %g over %d", sum, n)
	}
}

// TestWallWindowLeavesOutBackground: a process's own time a call is its
// handlers' less the calls it made from them; the health checks it
// answers and the background polls, made or answered, count on neither
// side.
func TestWallWindowLeavesOutBackground(t *testing.T) {
	// A series of each method, its sum in seconds.
	series := func(name, labels string, sum float64) string {
		return fmt.Sprintf("%[1]s_bucket{%[2]s,le=\"+Inf\"} 1\n%[1]s_sum{%[2]s} %[3]g\n%[1]s_count{%[2]s} 1\n", name, labels, sum)
	}
	const server, client = "grpc_server_handling_seconds", "grpc_client_handling_seconds"
	scrape := func(read, poll, check, callAuthorize, callPoll float64) map[string]*dto.MetricFamily {
		return parseMetrics(t, "# TYPE "+server+" histogram\n"+
			series(server, `grpc_method="Read"`, read)+
			series(server, `grpc_method="WatchedRecords"`, poll)+
			series(server, `grpc_method="Check",grpc_service="grpc.health.v1.Health"`, check)+
			"# TYPE "+client+" histogram\n"+
			series(client, `grpc_method="AuthorizeRead"`, callAuthorize)+
			series(client, `grpc_method="WatchedRecords"`, callPoll))
	}
	w := wallWindow{calls: 10,
		before: map[string]map[string]*dto.MetricFamily{"p": scrape(1, 1, 1, 1, 1)},
		after:  map[string]map[string]*dto.MetricFamily{"p": scrape(1.010, 1.5, 1.3, 1.004, 1.2)},
	}
	// 10 ms in Read over 10 calls, 4 ms of it calling out: 1,000 µs a
	// call in the handlers, 600 µs of its own.
	if got := w.handled("p", "", ""); got < 999 || got > 1001 {
		t.Errorf("handled = %.1f µs a call, want 1000: the polls and the checks left out", got)
	}
	if got := w.own("p"); got < 599 || got > 601 {
		t.Errorf("own = %.1f µs a call, want 600: the calls made from handlers subtracted, the polls not", got)
	}
}
