// Exact money: integer minor units of an ISO 4217 currency, never floats.
// Minor units are bigint, so every int64 amount is exact; arguments carry
// them to the kernel as JSON integers (see argumentsJson).

// The minor-unit exponents of the currencies Ambit accepts: the table of
// sdk/money/money.go (a test keeps the two equal). A code missing here is
// refused rather than guessed.
const exponents: Readonly<Record<string, number>> = Object.freeze({
  AUD: 2, BRL: 2, CAD: 2, CHF: 2, CNY: 2, CZK: 2, DKK: 2,
  EUR: 2, GBP: 2, HKD: 2, HUF: 2, IDR: 2, ILS: 2, INR: 2,
  ISK: 0, JPY: 0, KRW: 0, KWD: 3, MXN: 2, NOK: 2, NZD: 2,
  PLN: 2, SEK: 2, SGD: 2, THB: 2, TRY: 2, USD: 2, ZAR: 2,
  BHD: 3, CLP: 0, VND: 0,
});

const INT64_MAX = (1n << 63n) - 1n;

/** An amount as a tool argument, as the tool's schema declares it. */
export interface Money {
  readonly currency_code: string;
  readonly minor_units: bigint;
}

/** The minor-unit exponent of a currency code, or undefined if unsupported. */
export function exponent(code: string): number | undefined {
  return Object.hasOwn(exponents, code) ? exponents[code] : undefined;
}

/** The supported currency codes and their exponents. */
export function currencies(): Readonly<Record<string, number>> {
  return exponents;
}

/**
 * An amount in minor units, e.g. money("GBP", 1740) for GBP 17.40. A number
 * must be a safe integer; pass a bigint beyond 2^53.
 */
export function money(currencyCode: string, minorUnits: number | bigint): Money {
  if (typeof minorUnits === "number" && !Number.isSafeInteger(minorUnits)) {
    throw new RangeError(`money ${currencyCode}: ${minorUnits} is not a safe integer number of minor units`);
  }
  return Object.freeze({ currency_code: currencyCode, minor_units: BigInt(minorUnits) });
}

/**
 * Reads an amount written for people ("GBP 17.40", "17.40 GBP" or
 * "JPY 500") exactly, without floating point. More decimals than the
 * currency has, signs, exponents and amounts past int64 are refused.
 */
export function parseMoney(text: string): Money {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 2 || parts[0] === "") {
    throw new Error(`money ${JSON.stringify(text)}: want CODE AMOUNT`);
  }
  let [code, amount] = parts;
  if (exponent(code) === undefined) {
    [code, amount] = [amount, code];
  }
  const exp = exponent(code);
  if (exp === undefined) {
    throw new Error(`money ${JSON.stringify(text)}: no supported ISO 4217 currency code`);
  }
  const dot = amount.indexOf(".");
  const whole = dot < 0 ? amount : amount.slice(0, dot);
  const frac = dot < 0 ? "" : amount.slice(dot + 1);
  if (whole === "" || (dot >= 0 && frac === "") || frac.length > exp) {
    throw new Error(`money ${JSON.stringify(text)}: ${code} has ${exp} decimals; the amount has ${JSON.stringify(amount)}`);
  }
  const digits = whole + frac + "0".repeat(exp - frac.length);
  if (!/^[0-9]+$/.test(digits)) {
    throw new Error(`money ${JSON.stringify(text)}: ${JSON.stringify(amount)} is not a non-negative decimal amount`);
  }
  const minor = BigInt(digits);
  if (minor > INT64_MAX) {
    throw new Error(`money ${JSON.stringify(text)}: too large`);
  }
  return money(code, minor);
}

/** Renders an amount for people, e.g. "GBP 17.40". */
export function formatMoney(m: Money): string {
  const exp = exponent(m.currency_code) ?? 0;
  if (exp === 0) {
    return `${m.currency_code} ${m.minor_units}`;
  }
  const neg = m.minor_units < 0n;
  const abs = neg ? -m.minor_units : m.minor_units;
  const div = 10n ** BigInt(exp);
  return `${m.currency_code} ${neg ? "-" : ""}${abs / div}.${(abs % div).toString().padStart(exp, "0")}`;
}
