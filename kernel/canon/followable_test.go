package canon

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// provenanceRE is what followable writes out.
var provenanceRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:[^\s]+$`)

func TestFollowableIsTheExpression(t *testing.T) {
	refs := []string{"", ":", "a:", "a:b", "A:b", "1:b", "ab+.-9:x y", "item:POL-1", "item:POL 1", "policy-repo:contracts/r.yaml@4f2c9e1",
		"x:\t", "x:é", "é:x", "x::", "x:y:z", "x_y:z", "x:\xff", "x:a\vb", "x:a\u00a0b", "x:a\u2003b"}
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []byte("az09+.-:_ \t\n\f\r\vAZ\xc3\xa9\xff")
	for range 20000 {
		b := make([]byte, rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		refs = append(refs, string(b))
	}
	for _, r := range refs {
		if got, want := followable(r), provenanceRE.MatchString(r); got != want {
			t.Errorf("followable(%q) = %v, the expression says %v", r, got, want)
		}
	}
}
