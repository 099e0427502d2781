"""Exact money: integer minor units of an ISO 4217 currency, never floats."""

from dataclasses import dataclass

# The minor-unit exponents of the currencies Ambit accepts: the table of
# sdk/money/money.go (a test keeps the two equal). A code missing here is
# refused rather than guessed.
_EXPONENTS = {
    "AUD": 2, "BRL": 2, "CAD": 2, "CHF": 2, "CNY": 2, "CZK": 2, "DKK": 2,
    "EUR": 2, "GBP": 2, "HKD": 2, "HUF": 2, "IDR": 2, "ILS": 2, "INR": 2,
    "ISK": 0, "JPY": 0, "KRW": 0, "KWD": 3, "MXN": 2, "NOK": 2, "NZD": 2,
    "PLN": 2, "SEK": 2, "SGD": 2, "THB": 2, "TRY": 2, "USD": 2, "ZAR": 2,
    "BHD": 3, "CLP": 0, "VND": 0,
}

_INT64_MAX = (1 << 63) - 1
_DIGITS = frozenset("0123456789")


def exponent(code):
    """The minor-unit exponent of a currency code, or None if unsupported."""
    return _EXPONENTS.get(code)


@dataclass(frozen=True)
class Money:
    """An amount as a tool argument: {"currency_code", "minor_units"}."""

    currency_code: str
    minor_units: int

    def to_json(self):
        """The argument object a tool's schema declares."""
        return {"currency_code": self.currency_code, "minor_units": self.minor_units}

    def __str__(self):
        return format_money(self.currency_code, self.minor_units)


def money(currency_code, minor_units):
    """An amount in minor units, e.g. money("GBP", 1740) for GBP 17.40."""
    if not isinstance(minor_units, int) or isinstance(minor_units, bool):
        raise TypeError(f"money {currency_code}: minor units must be an int, got {type(minor_units).__name__}")
    return Money(currency_code, minor_units)


def parse_money(text):
    """Reads an amount written for people ("GBP 17.40", "17.40 GBP" or
    "JPY 500") exactly, without floating point. More decimals than the
    currency has, signs, exponents and amounts past int64 are refused."""
    parts = text.split()
    if len(parts) != 2:
        raise ValueError(f"money {text!r}: want CODE AMOUNT")
    code, amount = parts
    if code not in _EXPONENTS:
        code, amount = amount, code
    exp = _EXPONENTS.get(code)
    if exp is None:
        raise ValueError(f"money {text!r}: no supported ISO 4217 currency code")
    whole, dot, frac = amount.partition(".")
    if whole == "" or (dot and frac == "") or len(frac) > exp:
        raise ValueError(f"money {text!r}: {code} has {exp} decimals; the amount has {amount!r}")
    digits = whole + frac + "0" * (exp - len(frac))
    if not set(digits) <= _DIGITS:
        raise ValueError(f"money {text!r}: {amount!r} is not a non-negative decimal amount")
    minor = int(digits)
    if minor > _INT64_MAX:
        raise ValueError(f"money {text!r}: too large")
    return Money(code, minor)


def format_money(currency_code, minor_units):
    """Renders an amount for people, e.g. "GBP 17.40"."""
    exp = _EXPONENTS.get(currency_code, 0)
    if exp == 0:
        return f"{currency_code} {minor_units}"
    sign = "-" if minor_units < 0 else ""
    units, cents = divmod(abs(minor_units), 10**exp)
    return f"{currency_code} {sign}{units}.{cents:0{exp}d}"
