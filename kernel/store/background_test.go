package store

import (
	"strings"
	"testing"
	"time"
)

// reported sets a background's failure hook with onError and waits up to
// 10s for a failure it reports, which must name want.
func reported(t *testing.T, onError func(func(error)), want string) {
	t.Helper()
	failed := make(chan error, 1)
	onError(func(err error) {
		select {
		case failed <- err:
		default:
		}
	})
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), want) {
			t.Errorf("reported %q, want it to name %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no failure naming %q reported within 10s", want)
	}
}
