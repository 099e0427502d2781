import importlib
import re
from pathlib import Path

import pytest

import ambit_client as ambit

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "text, want",
    [
        ("GBP 17.40", ambit.money("GBP", 1740)),
        ("17.4 GBP", ambit.money("GBP", 1740)),
        ("GBP 100", ambit.money("GBP", 10000)),
        ("JPY 500", ambit.money("JPY", 500)),
        ("KWD 1.234", ambit.money("KWD", 1234)),
        ("GBP 0.05", ambit.money("GBP", 5)),
        ("GBP 92233720368547758.07", ambit.money("GBP", 9223372036854775807)),
    ],
)
def test_parse_money(text, want):
    assert ambit.parse_money(text) == want


@pytest.mark.parametrize(
    "text",
    [
        "GBP 92233720368547758.08",
        "GBP 17.401",
        "JPY 5.5",
        "GBP -1",
        "GBP +1",
        "GBP 1e3",
        "GBP 1_000",
        "GBP ١٢",  # Arabic-Indic digits are not ASCII digits
        "XYZ 1",
        "GBP",
        "GBP 1.",
        "GBP .5",
        "GBP 1.2.3",
        "GBP 1 2",
        "gbp 1",
    ],
)
def test_parse_money_refuses(text):
    with pytest.raises(ValueError):
        ambit.parse_money(text)


@pytest.mark.parametrize(
    "code, minor, want",
    [("GBP", 1740, "GBP 17.40"), ("GBP", 5, "GBP 0.05"), ("JPY", 500, "JPY 500"), ("KWD", 1234, "KWD 1.234"), ("EUR", -150, "EUR -1.50")],
)
def test_format_money(code, minor, want):
    assert ambit.format_money(code, minor) == want
    assert str(ambit.money(code, minor)) == want


def test_money_takes_integers_only():
    for bad in (17.4, "1740", True):
        with pytest.raises(TypeError):
            ambit.money("GBP", bad)


def test_money_is_an_argument_object():
    from ambit_client.agent import arguments_json

    got = arguments_json({"amount": ambit.money("GBP", 9223372036854775807), "claim_id": "C-1"})
    assert got == '{"amount":{"currency_code":"GBP","minor_units":9223372036854775807},"claim_id":"C-1"}'
    with pytest.raises(ValueError):
        arguments_json({"x": float("nan")})


def test_exponents_match_the_go_table():
    """The currencies and exponents are sdk/money's, which the kernel uses."""
    source = (REPO / "sdk" / "money" / "money.go").read_text()
    table = source[source.index("var exponents") :]
    table = table[: table.index("}")]
    go = {code: int(exp) for code, exp in re.findall(r'"([A-Z]{3})":\s*(\d+)', table)}
    assert go, "no exponents found in sdk/money/money.go"
    # ambit_client.money is the function; the module is looked up by name.
    assert importlib.import_module("ambit_client.money")._EXPONENTS == go
