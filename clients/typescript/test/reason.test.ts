import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import assert from "node:assert/strict";
import { test } from "node:test";
import { reason, reasonName } from "../src/index.js";
import { ErrorReason } from "../src/gen/ambit/error/v1/error_pb.js";

function errorInfo(name: string, domain: string): Uint8Array {
  const entry = new BinaryWriter().tag(1, 2).string("field").tag(2, 2).string("salary").finish();
  return new BinaryWriter().tag(1, 2).string(name).tag(2, 2).string(domain).tag(3, 2).bytes(entry).finish();
}

// A refusal as the gRPC transport hands it over: details undecoded.
function refusal(...details: { type: string; value: Uint8Array }[]): ConnectError {
  const err = new ConnectError("refused", Code.PermissionDenied);
  err.details.push(...details);
  return err;
}

for (const [name, err, want, wantName] of [
  ["ambit", refusal({ type: "google.rpc.ErrorInfo", value: errorInfo("ERROR_REASON_FIELDS_OUTSIDE_GRANT", "ambit") }), ErrorReason.FIELDS_OUTSIDE_GRANT, "ERROR_REASON_FIELDS_OUTSIDE_GRANT"],
  [
    "after other details",
    refusal(
      { type: "google.rpc.BadRequest", value: Uint8Array.of(0x0a, 0x00) },
      { type: "google.rpc.ErrorInfo", value: errorInfo("OTHER", "example.com") },
      { type: "google.rpc.ErrorInfo", value: errorInfo("ERROR_REASON_TASK_NOT_BOUND", "ambit") },
    ),
    ErrorReason.TASK_NOT_BOUND,
    "ERROR_REASON_TASK_NOT_BOUND",
  ],
  ["newer reason", refusal({ type: "google.rpc.ErrorInfo", value: errorInfo("ERROR_REASON_FROM_THE_FUTURE", "ambit") }), ErrorReason.UNSPECIFIED, "ERROR_REASON_FROM_THE_FUTURE"],
  ["other domain", refusal({ type: "google.rpc.ErrorInfo", value: errorInfo("ERROR_REASON_TASK_NOT_BOUND", "example.com") }), ErrorReason.UNSPECIFIED, undefined],
  ["no details", refusal(), ErrorReason.UNSPECIFIED, undefined],
  ["garbage", refusal({ type: "google.rpc.ErrorInfo", value: Uint8Array.of(0xff, 0xff) }), ErrorReason.UNSPECIFIED, undefined],
  ["not a ConnectError", new Error("x"), ErrorReason.UNSPECIFIED, undefined],
] as const) {
  test(`reason: ${name}`, () => {
    assert.equal(reason(err), want);
    assert.equal(reasonName(err), wantName);
  });
}
