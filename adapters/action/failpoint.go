package action

// Failpoints make crash tests kill the process at an exact point.
const (
	// FailpointEnv is the environment variable that arms a failpoint.
	FailpointEnv = "AMBIT_FAILPOINT"
	// FailpointAfterCommit kills the process with SIGKILL right after an
	// effect is committed at its target: before its key is marked Done
	// (unless an sql executor wrote both in one transaction), before the
	// kernel hears of it and before anything is answered.
	FailpointAfterCommit = "action.after-commit"
)

// AfterCommitHook returns the hook [Core] runs right after an effect
// commits: when getenv(FailpointEnv) is [FailpointAfterCommit] it is a
// genuine kill -9 of this process; otherwise it is nil and has no effect.
func AfterCommitHook(getenv func(string) string) func() {
	if getenv(FailpointEnv) != FailpointAfterCommit {
		return nil
	}
	return killSelf
}
