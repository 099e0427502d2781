package canon

import (
	"strconv"
	"testing"
)

// quote is strconv.Quote on every input, the ones its shortcut takes and
// the ones it leaves to strconv.
func TestQuote(t *testing.T) {
	for _, s := range []string{"", "contracts/refunds.yaml#v3", " ~", "a\"b", `a\b`, "tab\there", "\x7f", "\x00", "é", "日本", "\xff", "line\n"} {
		if got, want := quote(s), strconv.Quote(s); got != want {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzQuote(f *testing.F) {
	f.Add("contracts/refunds.yaml#v3")
	f.Add("a\"\\\x01é")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := quote(s), strconv.Quote(s); got != want {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	})
}
