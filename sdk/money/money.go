package money

import (
	"errors"
	"fmt"

	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
)

// ErrInvalid marks a malformed amount.
var ErrInvalid = errors.New("invalid money")

// exponents are the minor-unit exponents of the ISO 4217 currencies Ambit
// accepts. A code missing here is refused rather than guessed.
var exponents = map[string]int{
	"AUD": 2, "BRL": 2, "CAD": 2, "CHF": 2, "CNY": 2, "CZK": 2, "DKK": 2,
	"EUR": 2, "GBP": 2, "HKD": 2, "HUF": 2, "IDR": 2, "ILS": 2, "INR": 2,
	"ISK": 0, "JPY": 0, "KRW": 0, "KWD": 3, "MXN": 2, "NOK": 2, "NZD": 2,
	"PLN": 2, "SEK": 2, "SGD": 2, "THB": 2, "TRY": 2, "USD": 2, "ZAR": 2,
	"BHD": 3, "CLP": 0, "VND": 0,
}

// Exponent returns the minor-unit exponent of a currency code.
func Exponent(code string) (int, bool) {
	e, ok := exponents[code]
	return e, ok
}

// Check reports whether m is a well-formed amount: a known currency and a
// non-negative number of minor units.
func Check(m *contractv1.Money) error {
	if m == nil {
		return fmt.Errorf("%w: missing", ErrInvalid)
	}
	if _, ok := exponents[m.GetCurrencyCode()]; !ok {
		return fmt.Errorf("%w: currency_code %q is not a supported ISO 4217 code", ErrInvalid, m.GetCurrencyCode())
	}
	if m.GetMinorUnits() < 0 {
		return fmt.Errorf("%w: minor_units %d is negative", ErrInvalid, m.GetMinorUnits())
	}
	return nil
}

// CheckPositive is Check plus minor units above zero, for proposed amounts.
func CheckPositive(m *contractv1.Money) error {
	if err := Check(m); err != nil {
		return err
	}
	if m.GetMinorUnits() == 0 {
		return fmt.Errorf("%w: minor_units must be positive", ErrInvalid)
	}
	return nil
}

// Format renders m for people, e.g. "GBP 17.40".
func Format(m *contractv1.Money) string {
	if m == nil {
		return "no amount"
	}
	exp, ok := exponents[m.GetCurrencyCode()]
	if !ok || exp == 0 {
		return fmt.Sprintf("%s %d", m.GetCurrencyCode(), m.GetMinorUnits())
	}
	units := m.GetMinorUnits()
	sign := ""
	if units < 0 {
		sign, units = "-", -units
	}
	div := int64(1)
	for range exp {
		div *= 10
	}
	return fmt.Sprintf("%s %s%d.%0*d", m.GetCurrencyCode(), sign, units/div, exp, units%div)
}

// New returns a Money message.
func New(code string, minor int64) *contractv1.Money {
	return &contractv1.Money{CurrencyCode: code, MinorUnits: minor}
}
