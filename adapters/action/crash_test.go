package action_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/ambitkernel/ambit/adapters/action"
	"github.com/ambitkernel/ambit/sdk/service"
)

// crashChildEnv carries, to a child test process, the targets and the
// tool it executes before the failpoint kills it.
const crashChildEnv = "AMBIT_TEST_CRASH_CHILD"

type crashSpec struct {
	Targets targets `json:"targets"`
	Tool    string  `json:"tool"`
}

// TestCrashBetweenEffectAndReceipt executes one call in a child process
// armed with a failpoint: AMBIT_FAILPOINT=action.after-commit kills the
// child by SIGKILL right after the effect reached its target,
// action.after-start right after its key was written Started and before
// the target was asked. A retry here, with the same key, settles it: an
// sql row decides (and, missing, is written now), an http request is
// resent with the same Idempotency-Key, an mcp tool that takes the key is
// called again, one that does not is left in doubt. No target ever holds
// two effects.
func TestCrashBetweenEffectAndReceipt(t *testing.T) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		crashChild(t, spec)
		return
	}
	for _, tc := range []struct {
		// failpoint is the one armed (default action.after-commit).
		failpoint string
		tool      string
		// killed is the key's state right after the kill.
		killed action.State
		// want is the retry's refusal; nil: a receipt referring to ref.
		want     *refusal
		ref      string
		repeated bool
		check    effectCheck
	}{
		{tool: "transfer", killed: action.Started, ref: "eff-0001", check: oneTransfer(targets.targetDB)},
		{tool: "transfer_here", killed: action.Done, ref: "eff-0001", repeated: true, check: oneTransfer(targets.actionDB)},
		{tool: "notify", killed: action.Started, ref: "n-1", check: func(t *testing.T, _ targets, hook *hookTarget, _ *mcpTarget) {
			requests, effects := hook.seen()
			if len(requests) != 2 || requests[0] != requests[1] || requests[0].Key != "idem-1" || effects != 1 {
				t.Errorf("target saw %v and performed %d effects; want the same request twice and one effect", requests, effects)
			}
		}},
		{tool: "issue_credit", killed: action.Started, ref: "cr-1", check: func(t *testing.T, _ targets, _ *hookTarget, m *mcpTarget) {
			if calls, credits, _ := m.seen(); len(calls) != 2 || credits != 1 {
				t.Errorf("tool called %d times for %d credits; want twice, one credit", len(calls), credits)
			}
		}},
		{tool: "send_message", killed: action.Started, want: &inDoubt, check: oneCall("send_message")},
		{failpoint: action.FailpointAfterStart, tool: "transfer", killed: action.Started, ref: "eff-0001", check: oneTransfer(targets.targetDB)},
		{failpoint: action.FailpointAfterStart, tool: "notify", killed: action.Started, ref: "n-1", check: oneRequest(`{"amount":{"currency_code":"GBP","minor_units":1740},"key":"idem-1","task":"task-1","to":"acct-7"}`)},
		{failpoint: action.FailpointAfterStart, tool: "issue_credit", killed: action.Started, ref: "cr-1", check: oneCall("issue_credit")},
		// The tool was never called, but nothing can tell the adapter so:
		// it is not called now either.
		{failpoint: action.FailpointAfterStart, tool: "send_message", killed: action.Started, want: &inDoubt, check: noCall},
	} {
		if tc.failpoint == "" {
			tc.failpoint = action.FailpointAfterCommit
		}
		t.Run(tc.failpoint+"/"+tc.tool, func(t *testing.T) {
			tg, hook, m := newTargets(t)
			spec, err := json.Marshal(crashSpec{Targets: tg, Tool: tc.tool})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashBetweenEffectAndReceipt$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+string(spec), action.FailpointEnv+"="+tc.failpoint)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("child ended with %v, want a kill; output:\n%s", err, out)
			}
			if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child ended with %v, want SIGKILL; output:\n%s", err, out)
			}

			k := &kernel{}
			f := newFixture(t, k, tg, options{})
			killed, found := f.entry(t, "idem-1")
			if !found || killed.State != tc.killed || killed.EffectID != "eff-0001" || killed.Recorded {
				t.Fatalf("after the kill: key %+v (found %v), want %v, effect eff-0001, unrecorded", killed, found, tc.killed)
			}
			// The child's kernel key died with it: the same capability is
			// signed again under this fixture's.
			resp, err := f.h.Execute(agentCtx(), request(f.keys.capability(t, "idem-1", toolCall(tc.tool, transferArgs)), "idem-1"))
			if tc.want != nil {
				if diff := cmp.Diff(*tc.want, refusalOf(err)); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
			} else {
				if err != nil {
					t.Fatalf("retry after the crash: %v", err)
				}
				r := resp.GetReceipt()
				if r.GetReceiptId() != "eff-0001" || r.GetRecordRef() != tc.ref || resp.GetRepeated() != tc.repeated {
					t.Errorf("retry receipt %v repeated=%v; want effect eff-0001 referring to %s, repeated=%v", r, resp.GetRepeated(), tc.ref, tc.repeated)
				}
				if e, _ := f.entry(t, "idem-1"); e.State != action.Done || !proto.Equal(e.Receipt, resp.GetSignedReceipt()) {
					t.Errorf("key after the retry = %+v, want Done with the answered receipt", e)
				}
				if _, recorded := k.counts(); recorded != 1 {
					t.Errorf("kernel recorded %d effects, want 1", recorded)
				}
			}
			tc.check(t, tg, hook, m)
		})
	}
}

// crashChild executes the spec's call with the failpoint armed; the
// process must die before Execute returns.
func crashChild(t *testing.T, raw string) {
	var spec crashSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	fps, err := service.ParseFailpoints(os.Getenv(action.FailpointEnv))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &kernel{}, spec.Targets, options{deps: func(d *action.Deps) {
		d.AfterStart = fps.Hook(action.FailpointAfterStart)
		d.AfterCommit = fps.Hook(action.FailpointAfterCommit)
	}})
	req := request(f.keys.capability(t, "idem-1", toolCall(spec.Tool, transferArgs)), "idem-1")
	_, err = f.core.Execute(context.Background(), "agent", req)
	t.Fatalf("the failpoint did not kill the process (Execute = %v)", err)
}

// noCall checks that the mcp target was never called.
func noCall(t *testing.T, _ targets, _ *hookTarget, m *mcpTarget) {
	t.Helper()
	if calls, credits, messages := m.seen(); len(calls) != 0 || credits+messages != 0 {
		t.Errorf("mcp target called %v: %d credits, %d messages; want nothing", calls, credits, messages)
	}
}
