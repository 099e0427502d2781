package client_test

import (
	"testing"

	"github.com/ambitkernel/ambit/sdk/client"
)

func TestParseMoney(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want client.MoneyArg
		err  bool
	}{
		{in: "GBP 17.40", want: client.Money("GBP", 1740)},
		{in: "17.4 GBP", want: client.Money("GBP", 1740)},
		{in: "GBP 100", want: client.Money("GBP", 10000)},
		{in: "JPY 500", want: client.Money("JPY", 500)},
		{in: "KWD 1.234", want: client.Money("KWD", 1234)},
		{in: "GBP 92233720368547758.07", want: client.Money("GBP", 9223372036854775807)},
		{in: "GBP 92233720368547758.08", err: true},
		{in: "GBP 17.401", err: true},
		{in: "JPY 5.5", err: true},
		{in: "GBP -1", err: true},
		{in: "GBP 1e3", err: true},
		{in: "XYZ 1", err: true},
		{in: "GBP", err: true},
		{in: "GBP 1.", err: true},
	} {
		got, err := client.ParseMoney(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseMoney(%q) = %+v, %v; want %+v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
	if s := client.Money("GBP", 1740).String(); s != "GBP 17.40" {
		t.Errorf("String = %q", s)
	}
}
