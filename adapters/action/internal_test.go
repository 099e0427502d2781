package action

import (
	"math"
	"testing"
)

func TestStatusesDeclareReasons(t *testing.T) {
	if err := statuses().Validate(); err != nil {
		t.Error(err)
	}
}

func TestSameSQLValue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got any
		same      bool
	}{
		{name: "text", want: "acct-7", got: "acct-7", same: true},
		{name: "other text", want: "acct-7", got: "acct-9"},
		{name: "text read as bytes", want: "acct-7", got: []byte("acct-7"), same: true},
		{name: "integer", want: int64(1740), got: int64(1740), same: true},
		{name: "other integer", want: int64(1740), got: int64(1741)},
		{name: "large integers differ exactly", want: int64(1<<62 + 1), got: int64(1 << 62)},
		{name: "unsigned as stored", want: uint64(7), got: int64(7), same: true},
		{name: "unsigned beyond int64", want: uint64(math.MaxUint64), got: int64(-1)},
		{name: "bool as stored", want: true, got: int64(1), same: true},
		{name: "false as stored", want: false, got: int64(0), same: true},
		{name: "bool against another number", want: true, got: int64(2)},
		{name: "integral double in an INTEGER column", want: 1740.0, got: int64(1740), same: true},
		{name: "integer in a REAL column", want: int64(1740), got: 1740.0, same: true},
		{name: "fractional double", want: 17.4, got: int64(17)},
		{name: "double", want: 17.4, got: 17.4, same: true},
		{name: "number written as text", want: int64(7), got: "7"},
		{name: "null", want: "x", got: nil},
	} {
		if got := sameSQLValue(tc.want, tc.got); got != tc.same {
			t.Errorf("%s: sameSQLValue(%#v, %#v) = %v", tc.name, tc.want, tc.got, got)
		}
	}
}
