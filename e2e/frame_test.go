package e2e_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/ambitkernel/ambit/sdk/devstack"
)

// span is what the test reads of a span written by the stdout exporter.
type span struct {
	Name        string
	SpanContext struct {
		TraceID string
	}
}

func readSpans(t *testing.T, path string) []span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []span
	dec := json.NewDecoder(f)
	for {
		var s span
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, s)
	}
}

// TestOneTraceThroughFourProcesses runs the refund story with a W3C trace context
// set by the client: read → propose → execute → readback appear in one
// trace, in the spans of all four processes. The kernel's metrics count
// the decisions by outcome.
func TestOneTraceThroughFourProcesses(t *testing.T) {
	st := startStack(t, devstack.Options{Tracing: true})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.AppendToOutgoingContext(testCtx(t), "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	if err := st.Story(io.Discard).RunRefund(ctx); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get("http://" + st.Addr(devstack.Kernel, "metrics") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, re := range []string{
		`ambit_decisions_total\{outcome="allow"\} [1-9]`,
		`grpc_server_handled_total\{grpc_code="OK",grpc_method="SubmitProposal",grpc_service="ambit.agent.v1.AgentService",grpc_type="unary"\} [1-9]`,
		`grpc_server_handling_seconds_count\{grpc_method="RedeemCapability",grpc_service="ambit.kernel.v1.AdapterService",grpc_type="unary"\} [1-9]`,
		// The story's decision, redemption and receipts each committed.
		`ambit_store_commit_seconds_count [1-9]`,
		`ambit_store_commit_updates_sum [1-9]`,
	} {
		if !regexp.MustCompile(re).Match(body) {
			t.Errorf("kernel metrics do not match %s", re)
		}
	}

	// Stopping flushes the spans.
	if err := st.Stop(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		devstack.Evidence: {"ambit.evidence.v1.EvidenceService/Read", "ambit.kernel.v1.AdapterService/AuthorizeRead"},
		devstack.Kernel: {"ambit.kernel.v1.AdapterService/AuthorizeRead", "ambit.agent.v1.AgentService/SubmitProposal",
			"ambit.kernel.v1.AdapterService/RedeemCapability", "ambit.kernel.v1.AdapterService/RecordReadback"},
		devstack.Action:   {"ambit.action.v1.ActionService/Execute", "ambit.kernel.v1.AdapterService/RedeemCapability"},
		devstack.Verifier: {"ambit.verifier.v1.VerifierService/Verify", "ambit.kernel.v1.AdapterService/RecordReadback"},
	}
	for name, names := range want {
		inTrace := map[string]bool{}
		for _, s := range readSpans(t, st.TracePath(name)) {
			if s.SpanContext.TraceID == traceID {
				inTrace[s.Name] = true
			}
		}
		for _, n := range names {
			if !inTrace[n] {
				t.Errorf("%s: no span %s in trace %s (spans in it: %v)", name, n, traceID, keys(inTrace))
			}
		}
	}
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, ", ")
}
