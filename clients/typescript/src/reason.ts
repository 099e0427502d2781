// The machine-readable reason of a refusal from any Ambit process: every
// refusal carries a google.rpc.ErrorInfo detail with domain "ambit" and a
// reason naming an ambit.error.v1.ErrorReason value. Connect hands the
// details over undecoded; ErrorInfo's two string fields are read here from
// the wire format, so no googleapis package is needed.

import { ConnectError } from "@connectrpc/connect";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { ErrorReason, ErrorReasonSchema } from "./gen/ambit/error/v1/error_pb.js";

const DOMAIN = "ambit";

/**
 * The reason as the server named it (e.g. "ERROR_REASON_TASK_NOT_BOUND"),
 * also one newer than this client; undefined when the error carries none.
 */
export function reasonName(err: unknown): string | undefined {
  if (!(err instanceof ConnectError)) {
    return undefined;
  }
  for (const detail of err.details) {
    if ("desc" in detail || detail.type !== "google.rpc.ErrorInfo") {
      continue;
    }
    const info = decodeErrorInfo(detail.value);
    if (info?.domain === DOMAIN) {
      return info.reason;
    }
  }
  return undefined;
}

/** The ErrorReason of a refusal, or ErrorReason.UNSPECIFIED for an error that carries none. */
export function reason(err: unknown): ErrorReason {
  const name = reasonName(err);
  const value = ErrorReasonSchema.values.find((v) => v.name === name);
  return value === undefined ? ErrorReason.UNSPECIFIED : (value.number as ErrorReason);
}

function decodeErrorInfo(bytes: Uint8Array): { reason: string; domain: string } | undefined {
  const out = { reason: "", domain: "" };
  try {
    const r = new BinaryReader(bytes);
    while (r.pos < r.len) {
      const [field, wire] = r.tag();
      if (field === 1 && wire === WireType.LengthDelimited) {
        out.reason = r.string();
      } else if (field === 2 && wire === WireType.LengthDelimited) {
        out.domain = r.string();
      } else {
        r.skip(wire, field);
      }
    }
  } catch {
    return undefined;
  }
  return out;
}
