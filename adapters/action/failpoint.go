package action

import "github.com/ambitkernel/ambit/sdk/service"

// The action adapter's own failpoints, for crash tests: armed by the
// process frame's environment variable (service.FailpointEnv), each kills
// the process with SIGKILL between two durable steps of an execution. The
// frame's own points (e.g. "answer:RedeemCapability", "call:RecordEffect",
// "reply:Execute") cover the steps at the edges of a call.
const (
	// FailpointEnv is the environment variable that arms failpoints.
	FailpointEnv = service.FailpointEnv
	// FailpointAfterStart kills the process right after a key is written
	// Started and before its effect is attempted at the target.
	FailpointAfterStart = "action.after-start"
	// FailpointAfterCommit kills the process right after an effect is
	// committed at its target: before its key is marked Done (unless an
	// sql executor wrote both in one transaction), before the kernel
	// hears of it and before anything is answered.
	FailpointAfterCommit = "action.after-commit"
)
