package cli

import "testing"

// TestShellQuote: a "more:" line's words survive a POSIX shell as they
// were typed.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"refund-1":           "refund-1",
		"127.0.0.1:7443":     "127.0.0.1:7443",
		"task.bind,decision": "task.bind,decision",
		"":                   "''",
		"two words":          "'two words'",
		"it's":               `'it'\''s'`,
		"$HOME":              "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
