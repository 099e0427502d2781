package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ambitkernel/ambit/sdk/money"
)

// MoneyArg is a Money argument as a tool's schema declares it.
type MoneyArg struct {
	CurrencyCode string `json:"currency_code"`
	MinorUnits   int64  `json:"minor_units"`
}

// Money is an amount as an argument: integer minor units of an ISO 4217
// currency, e.g. Money("GBP", 1740) for GBP 17.40.
func Money(currency string, minor int64) MoneyArg {
	return MoneyArg{CurrencyCode: currency, MinorUnits: minor}
}

// ParseMoney reads an amount written for people — "GBP 17.40", "17.40 GBP"
// or "JPY 500" — exactly, without floating point. More decimals than the
// currency has are refused.
func ParseMoney(s string) (MoneyArg, error) {
	parts := strings.Fields(s)
	if len(parts) != 2 {
		return MoneyArg{}, fmt.Errorf("money %q: want CODE AMOUNT", s)
	}
	code, amount := parts[0], parts[1]
	if _, ok := money.Exponent(code); !ok {
		code, amount = parts[1], parts[0]
	}
	exp, ok := money.Exponent(code)
	if !ok {
		return MoneyArg{}, fmt.Errorf("money %q: no supported ISO 4217 currency code", s)
	}
	whole, frac, hasFrac := strings.Cut(amount, ".")
	if whole == "" || (hasFrac && frac == "") || len(frac) > exp {
		return MoneyArg{}, fmt.Errorf("money %q: %s has %d decimals; the amount has %q", s, code, exp, amount)
	}
	var minor int64
	for _, r := range whole + frac + strings.Repeat("0", exp-len(frac)) {
		if r < '0' || r > '9' {
			return MoneyArg{}, fmt.Errorf("money %q: %q is not a non-negative decimal amount", s, amount)
		}
		if minor > (1<<63-1-int64(r-'0'))/10 {
			return MoneyArg{}, errors.New("money " + s + ": too large")
		}
		minor = minor*10 + int64(r-'0')
	}
	return MoneyArg{CurrencyCode: code, MinorUnits: minor}, nil
}

// String renders the amount for people, e.g. "GBP 17.40".
func (m MoneyArg) String() string {
	return money.Format(money.New(m.CurrencyCode, m.MinorUnits))
}
