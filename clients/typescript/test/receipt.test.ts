import { create, fromJson, toBinary, type DescMessage } from "@bufbuild/protobuf";
import assert from "node:assert/strict";
import { generateKeyPairSync, sign } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ReceiptError, loadPublicKey, signingInput, verifyReceipt } from "../src/index.js";
import {
  CapabilitySchema,
  DecisionReceiptSchema,
  EffectReceiptSchema,
  EnvelopeSchema,
  ReadbackReceiptSchema,
  ReadbackStatus,
  type Batch,
  type Envelope,
} from "../src/gen/ambit/receipt/v1/receipt_pb.js";
import { REPO } from "./stack.js";

// An EffectReceipt signed by sdk/envelope (Go).
const VECTOR = JSON.parse(readFileSync(join(REPO, "clients", "testdata", "envelope.json"), "utf8"));

function vector(): { env: Envelope; pub: Uint8Array } {
  return { env: fromJson(EnvelopeSchema, VECTOR.envelope), pub: Buffer.from(VECTOR.public_key_hex, "hex") };
}

function flipped(env: Envelope, field: "payload" | "signature", index: number): Envelope {
  const bytes = Uint8Array.from(env[field]);
  bytes[index] ^= 0x01;
  return { ...env, [field]: bytes };
}

test("a Go-signed receipt verifies", () => {
  const { env, pub } = vector();
  assert.deepEqual(verifyReceipt(env, pub, EffectReceiptSchema), fromJson(EffectReceiptSchema, VECTOR.receipt));
});

for (const [name, make, schema] of [
  ["flipped payload byte", (e: Envelope) => flipped(e, "payload", 3), EffectReceiptSchema],
  ["flipped signature byte", (e: Envelope) => flipped(e, "signature", 0), EffectReceiptSchema],
  ["relabelled type", (e: Envelope) => ({ ...e, payloadType: "ambit.receipt.v1.ReadbackReceipt" }), ReadbackReceiptSchema],
  ["decoded as another type", (e: Envelope) => e, ReadbackReceiptSchema],
  ["missing", () => undefined, EffectReceiptSchema],
] as const) {
  test(`a tampered receipt is refused: ${name}`, () => {
    const { env, pub } = vector();
    assert.throws(() => verifyReceipt(make(env), pub, schema), ReceiptError);
  });
}

test("another key is refused", () => {
  const { env } = vector();
  const { publicKey } = generateKeyPairSync("ed25519");
  assert.throws(() => verifyReceipt(env, publicKey, EffectReceiptSchema), /bad signature/);
});

test("a receipt signed here verifies with a PEM key from a key folder", () => {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const dir = mkdtempSync(join(tmpdir(), "ambit-keys-"));
  writeFileSync(join(dir, "verifier.sign.pub"), publicKey.export({ type: "spki", format: "pem" }));
  const receipt = create(ReadbackReceiptSchema, { receiptId: "rb-1", status: ReadbackStatus.VERIFIED });
  const payload = toBinary(ReadbackReceiptSchema, receipt);
  const env = create(EnvelopeSchema, {
    payloadType: ReadbackReceiptSchema.typeName,
    payload,
    keyId: "verifier",
    signature: sign(null, signingInput(ReadbackReceiptSchema.typeName, payload), privateKey),
  });
  assert.deepEqual(verifyReceipt(env, loadPublicKey(dir, "verifier"), ReadbackReceiptSchema), receipt);
});

test("the signing input is length-prefixed", () => {
  assert.notDeepEqual(signingInput("ab", Uint8Array.of(0x63)), signingInput("a", Uint8Array.of(0x62, 0x63)));
  const want = Buffer.concat([
    Buffer.from("ambit-envelope-v1"),
    Buffer.from([0, 0, 0, 0, 0, 0, 0, 1]),
    Buffer.from("T"),
    Buffer.from([0, 0, 0, 0, 0, 0, 0, 2]),
    Buffer.from("xy"),
  ]);
  assert.deepEqual(Buffer.from(signingInput("T", Buffer.from("xy"))), want);
});

// Three records signed together by sdk/envelope (Go): one signature over
// their Merkle tree's root.
const BATCH = JSON.parse(readFileSync(join(REPO, "clients", "testdata", "envelope-batch.json"), "utf8"));
const SCHEMAS: Record<string, DescMessage> = {
  [CapabilitySchema.typeName]: CapabilitySchema,
  [DecisionReceiptSchema.typeName]: DecisionReceiptSchema,
  [EffectReceiptSchema.typeName]: EffectReceiptSchema,
};

function batchVector(): { records: { env: Envelope; schema: DescMessage; record: unknown }[]; pub: Uint8Array } {
  const records = BATCH.batch.map((e: { envelope: unknown; record: unknown }) => {
    const env = fromJson(EnvelopeSchema, e.envelope as never);
    const schema = SCHEMAS[env.payloadType];
    return { env, schema, record: fromJson(schema, e.record as never) };
  });
  return { records, pub: Buffer.from(BATCH.public_key_hex, "hex") };
}

test("Go-signed records under one signature verify", () => {
  const { records, pub } = batchVector();
  assert.equal(new Set(records.map((r) => Buffer.from(r.env.signature).toString("hex"))).size, 1);
  for (const { env, schema, record } of records) {
    assert.deepEqual(verifyReceipt(env, pub, schema), record);
  }
});

function withBatch(env: Envelope, edit: (b: Batch) => Partial<Batch> | undefined): Envelope {
  const b = env.batch!;
  const changed = edit({ ...b, path: b.path.map((p) => Uint8Array.from(p)) });
  return { ...env, batch: changed === undefined ? undefined : { ...b, ...changed } as Batch };
}

for (const [name, make] of [
  ["flipped payload byte", (e: Envelope) => flipped(e, "payload", 0)],
  ["flipped path byte", (e: Envelope) => withBatch(e, (b) => { b.path[0][0] ^= 1; return b; })],
  ["another leaf's place", (e: Envelope) => withBatch(e, () => ({ index: 1n }))],
  ["place past the batch", (e: Envelope) => withBatch(e, () => ({ index: 3n }))],
  ["another size", (e: Envelope) => withBatch(e, () => ({ size: 4n }))],
  ["a batch of one", (e: Envelope) => withBatch(e, () => ({ size: 1n, path: [] }))],
  ["path cut short", (e: Envelope) => withBatch(e, (b) => ({ path: b.path.slice(0, 1) }))],
  ["path hash of 31 bytes", (e: Envelope) => withBatch(e, (b) => ({ path: [b.path[0].slice(0, 31), b.path[1]] }))],
  ["batch dropped", (e: Envelope) => withBatch(e, () => undefined)],
  ["another record's payload under this path", (e: Envelope) => ({ ...e, payload: batchVector().records[2].env.payload })],
] as const) {
  test(`a tampered record of a batch is refused: ${name}`, () => {
    const { records, pub } = batchVector();
    assert.throws(() => verifyReceipt(make(records[0].env), pub, CapabilitySchema), ReceiptError);
  });
}
