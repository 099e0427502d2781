// A tool call's arguments as JSON. JSON.stringify cannot write a bigint
// (Money's minor units) as a bare number, so this small writer does: the
// kernel reads numbers exactly as written.

import type { Money } from "./money.js";

export type ArgumentValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Money
  | readonly ArgumentValue[]
  | { readonly [key: string]: ArgumentValue | undefined };

/**
 * The arguments object as JSON: bigints as integers, numbers as
 * JSON.stringify writes them (non-finite numbers are refused), keys in
 * insertion order; undefined members are left out.
 */
export function argumentsJson(args: { readonly [key: string]: ArgumentValue | undefined }): string {
  return write(args, "args");
}

function write(v: unknown, path: string): string {
  switch (typeof v) {
    case "bigint":
      return v.toString();
    case "number":
      if (!Number.isFinite(v)) {
        throw new RangeError(`${path}: ${v} is not a JSON number`);
      }
      return JSON.stringify(v);
    case "string":
    case "boolean":
      return JSON.stringify(v);
    case "object":
      if (v === null) {
        return "null";
      }
      if (Array.isArray(v)) {
        return `[${v.map((item, i) => write(item, `${path}[${i}]`)).join(",")}]`;
      }
      if (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null) {
        throw new TypeError(`${path}: ${Object.prototype.toString.call(v)} is not a JSON argument value`);
      }
      return `{${Object.entries(v)
        .filter(([, item]) => item !== undefined)
        .map(([k, item]) => `${JSON.stringify(k)}:${write(item, `${path}.${k}`)}`)
        .join(",")}}`;
    default:
      throw new TypeError(`${path}: a ${typeof v} is not a JSON argument value`);
  }
}
