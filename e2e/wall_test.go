package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// wallSplit is where a call's wall time goes at one call in flight, in µs
// a call: as the client sees it, inside the kernel's handler (the gRPC
// server's handling-time histogram, which the interceptors are inside
// of), and in the store's COMMITs (the database's writes and, at
// durability full, its sync), with the COMMITs a call. The calls are back
// to back, so the client's time a call is the window over the calls.
type wallSplit struct {
	call, handler, commit, commits float64
}

// outside is a call's time outside the kernel's handler: the client,
// the transport both ways, and the server's decoding and encoding.
func (w wallSplit) outside() float64 { return w.call - w.handler }

// wallUnder runs op at one in flight for about d, and reads the kernel's
// metrics at metricsAddr just before and after: its handling time of
// method (of service) and its COMMITs over the calls it handled
// meanwhile. With no method, op is a loop of several calls: the handling
// time is of every method but the health checks', and what is per call is
// per op.
func wallUnder(ctx context.Context, metricsAddr, service, method string, d time.Duration, op func(i int) error) (wallSplit, error) {
	var before, after map[string]*dto.MetricFamily
	var window time.Duration
	calls, err := underLoad(1, op, func() error {
		t0 := time.Now()
		var err error
		if before, err = scrapeMetrics(ctx, metricsAddr); err != nil {
			return err
		}
		time.Sleep(d)
		after, err = scrapeMetrics(ctx, metricsAddr)
		window = time.Since(t0)
		return err
	})
	if err != nil {
		return wallSplit{}, err
	}
	labels := map[string]string{"grpc_service": service, "grpc_method": method}
	if method == "" {
		labels = nil
	}
	handled, handledN := histogramDelta(before, after, "grpc_server_handling_seconds", labels)
	committed, commits := histogramDelta(before, after, "ambit_store_commit_seconds", nil)
	if calls == 0 || handledN == 0 {
		return wallSplit{}, fmt.Errorf("no %s call ended while the metrics were read", cmp.Or(method, "loop"))
	}
	n := float64(handledN)
	if method == "" {
		// Per loop, over the loops that ended between the reads.
		checks, _ := histogramDelta(before, after, "grpc_server_handling_seconds", map[string]string{"grpc_service": "grpc.health.v1.Health"})
		handled, n = handled-checks, float64(calls)
	}
	return wallSplit{
		call:    float64(window.Microseconds()) / float64(calls),
		handler: handled / n * 1e6,
		commit:  committed / n * 1e6,
		commits: float64(commits) / n,
	}, nil
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

// printWall prints where a no-op's, a decision's and a whole loop's wall
// time go at one in flight.
func printWall(durability string, d time.Duration, noop, decision, loop wallSplit) {
	fmt.Printf("%-66s %13s %13s %13s\n", fmt.Sprintf("wall time at 1 in flight, durability %s (µs, means over %s)", durability, d), "no-op", "decision", "loop")
	for _, row := range []struct {
		name             string
		v                func(wallSplit) float64
		fractionalDigits int
	}{
		{"the client's call (the loop's calls), end to end", func(w wallSplit) float64 { return w.call }, 0},
		{"in the kernel's handlers, their interceptors included", func(w wallSplit) float64 { return w.handler }, 0},
		{"  of it or beside it, the store's COMMITs: writes and, at full, sync", func(w wallSplit) float64 { return w.commit }, 0},
		{"  COMMITs (the calls' own, and the background's)", func(w wallSplit) float64 { return w.commits }, 2},
		{"outside the kernel's handlers: client, transport, other processes", wallSplit.outside, 0},
	} {
		fmt.Printf("%-66s", row.name)
		for _, w := range []wallSplit{noop, decision, loop} {
			fmt.Printf(" %13.*f", row.fractionalDigits, row.v(w))
		}
		fmt.Println()
	}
}

// TestHistogramDelta reads the growth of a histogram's series that match
// labels, from two scrapes in the text format.
func TestHistogramDelta(t *testing.T) {
	parse := func(text string) map[string]*dto.MetricFamily {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return fams
	}
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
