import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { argumentsJson, currencies, formatMoney, money, parseMoney } from "../src/index.js";
import { REPO } from "./stack.js";

describe("parseMoney", () => {
  for (const [text, want] of [
    ["GBP 17.40", money("GBP", 1740)],
    ["17.4 GBP", money("GBP", 1740)],
    ["GBP 100", money("GBP", 10000)],
    ["JPY 500", money("JPY", 500)],
    ["KWD 1.234", money("KWD", 1234)],
    ["GBP 0.05", money("GBP", 5)],
    ["GBP 92233720368547758.07", money("GBP", 9223372036854775807n)],
  ] as const) {
    test(text, () => assert.deepEqual(parseMoney(text), want));
  }
  for (const text of [
    "GBP 92233720368547758.08",
    "GBP 17.401",
    "JPY 5.5",
    "GBP -1",
    "GBP +1",
    "GBP 1e3",
    "GBP 1_000",
    "GBP ١٢",
    "XYZ 1",
    "GBP",
    "GBP 1.",
    "GBP .5",
    "GBP 1.2.3",
    "GBP 1 2",
    "gbp 1",
    "toString 1",
  ]) {
    test(`refuses ${JSON.stringify(text)}`, () => assert.throws(() => parseMoney(text)));
  }
});

test("formatMoney", () => {
  for (const [m, want] of [
    [money("GBP", 1740), "GBP 17.40"],
    [money("GBP", 5), "GBP 0.05"],
    [money("JPY", 500), "JPY 500"],
    [money("KWD", 1234), "KWD 1.234"],
    [money("EUR", -150), "EUR -1.50"],
  ] as const) {
    assert.equal(formatMoney(m), want);
  }
});

test("money takes safe integers only", () => {
  assert.throws(() => money("GBP", 17.4), RangeError);
  assert.throws(() => money("GBP", 2 ** 53), RangeError);
  assert.equal(money("GBP", 2n ** 53n).minor_units, 9007199254740992n);
});

test("arguments keep int64 amounts exact", () => {
  assert.equal(
    argumentsJson({ amount: money("GBP", 9223372036854775807n), claim_id: "C-1", note: undefined, tags: ["a", 1, true, null] }),
    '{"amount":{"currency_code":"GBP","minor_units":9223372036854775807},"claim_id":"C-1","tags":["a",1,true,null]}',
  );
  assert.throws(() => argumentsJson({ x: Number.NaN }), RangeError);
  assert.throws(() => argumentsJson({ x: new Date() as never }), TypeError);
});

test("the currencies are sdk/money's, which the kernel uses", () => {
  const source = readFileSync(join(REPO, "sdk", "money", "money.go"), "utf8");
  const table = source.slice(source.indexOf("var exponents"));
  const go = Object.fromEntries(
    [...table.slice(0, table.indexOf("}")).matchAll(/"([A-Z]{3})":\s*(\d+)/g)].map((m) => [m[1], Number(m[2])]),
  );
  assert.ok(Object.keys(go).length > 0, "no exponents found in sdk/money/money.go");
  assert.deepEqual({ ...currencies() }, go);
});
