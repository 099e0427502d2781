// Offline verification of Ambit's signed receipts and capabilities.
//
// An Envelope (ambit.receipt.v1) carries the serialised payload, its full
// type name, the signer's key id and an Ed25519 signature over
//
//   "ambit-envelope-v1" || u64be(len(payload_type)) || payload_type ||
//   u64be(len(payload)) || payload
//
// so a verifier checks the exact bytes it was given and only then decodes
// them: no canonical serialisation is needed. Records signed together
// carry a batch instead (index, size and the RFC 6962 inclusion path of
// the record's encoding); the signature then covers
//
//   "ambit-envelope-batch-v1" || u64be(size) || root
//
// where root is the Merkle tree hash the path leads to.

import { fromBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Batch, Envelope } from "./gen/ambit/receipt/v1/receipt_pb.js";

const DOMAIN = new TextEncoder().encode("ambit-envelope-v1");
const BATCH_DOMAIN = new TextEncoder().encode("ambit-envelope-batch-v1");

// The DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 key bytes follow.
const ED25519_SPKI_PREFIX = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);

/** An envelope that does not verify: wrong type, bad signature or an undecodable payload. */
export class ReceiptError extends Error {
  override name = "ReceiptError";
}

/** The bytes an envelope's signature covers. */
export function signingInput(payloadType: string, payload: Uint8Array): Uint8Array {
  const typ = new TextEncoder().encode(payloadType);
  const out = new Uint8Array(DOMAIN.length + 8 + typ.length + 8 + payload.length);
  const view = new DataView(out.buffer);
  let at = 0;
  out.set(DOMAIN, at);
  at += DOMAIN.length;
  view.setBigUint64(at, BigInt(typ.length));
  at += 8;
  out.set(typ, at);
  at += typ.length;
  view.setBigUint64(at, BigInt(payload.length));
  at += 8;
  out.set(payload, at);
  return out;
}

function sha256(...parts: Uint8Array[]): Uint8Array {
  const h = createHash("sha256");
  for (const p of parts) {
    h.update(p);
  }
  return new Uint8Array(h.digest());
}

/**
 * The root of the batch a record with this encoding belongs to, by its
 * inclusion path (RFC 9162, section 2.1.3.2).
 */
export function batchRoot(batch: Batch, encoding: Uint8Array): Uint8Array {
  if (batch.size < 2n) {
    throw new ReceiptError(`receipt: a batch of ${batch.size} records; one record is signed alone`);
  }
  if (batch.index >= batch.size) {
    throw new ReceiptError(`receipt: leaf ${batch.index} of a batch of ${batch.size}`);
  }
  let fn = batch.index;
  let sn = batch.size - 1n;
  let r = sha256(Uint8Array.of(0), encoding);
  for (const p of batch.path) {
    if (p.length !== 32) {
      throw new ReceiptError("receipt: a batch path hash is not 32 bytes");
    }
    if (sn === 0n) {
      throw new ReceiptError("receipt: batch path too long");
    }
    if ((fn & 1n) === 1n || fn === sn) {
      r = sha256(Uint8Array.of(1), p, r);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = sha256(Uint8Array.of(1), r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) {
    throw new ReceiptError("receipt: batch path too short");
  }
  return r;
}

/** The bytes an envelope's signature covers: its record's encoding, or its batch's size and root. */
export function signedBytes(envelope: Envelope): Uint8Array {
  const encoding = signingInput(envelope.payloadType, envelope.payload);
  if (envelope.batch === undefined) {
    return encoding;
  }
  const root = batchRoot(envelope.batch, encoding);
  const out = new Uint8Array(BATCH_DOMAIN.length + 8 + root.length);
  out.set(BATCH_DOMAIN);
  new DataView(out.buffer).setBigUint64(BATCH_DOMAIN.length, envelope.batch.size);
  out.set(root, BATCH_DOMAIN.length + 8);
  return out;
}

/**
 * The receipt-verification key of identity name (<name>.sign.pub, PEM, in a
 * key folder as `ambitctl dev init` writes it: every folder holds the
 * public keys of the kernel, the adapters and the verifier).
 */
export function loadPublicKey(identityDir: string, name: string): KeyObject {
  const path = join(identityDir, `${name}.sign.pub`);
  const key = createPublicKey(readFileSync(path));
  if (key.asymmetricKeyType !== "ed25519") {
    throw new ReceiptError(`${path} holds a ${key.asymmetricKeyType} key, want Ed25519`);
  }
  return key;
}

/** An Ed25519 public key from its 32 raw bytes. */
export function publicKeyFromBytes(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) {
    throw new ReceiptError(`an Ed25519 public key has 32 bytes, got ${raw.length}`);
  }
  const der = new Uint8Array(ED25519_SPKI_PREFIX.length + 32);
  der.set(ED25519_SPKI_PREFIX);
  der.set(raw, ED25519_SPKI_PREFIX.length);
  return createPublicKey({ key: Buffer.from(der), format: "der", type: "spki" });
}

/**
 * Checks an envelope's signature with its issuer's public key and decodes
 * the payload as schema, whose full name the envelope must carry. Throws
 * ReceiptError when anything does not verify.
 */
export function verifyReceipt<Desc extends DescMessage>(
  envelope: Envelope | undefined,
  publicKey: KeyObject | Uint8Array,
  schema: Desc,
): MessageShape<Desc> {
  if (envelope === undefined) {
    throw new ReceiptError("receipt: missing");
  }
  if (envelope.payloadType !== schema.typeName) {
    throw new ReceiptError(`receipt: payload type ${JSON.stringify(envelope.payloadType)}, want ${JSON.stringify(schema.typeName)}`);
  }
  const key = publicKey instanceof Uint8Array ? publicKeyFromBytes(publicKey) : publicKey;
  if (!verify(null, signedBytes(envelope), key, envelope.signature)) {
    throw new ReceiptError(`receipt: bad signature from ${JSON.stringify(envelope.keyId)}`);
  }
  try {
    return fromBinary(schema, envelope.payload);
  } catch (e) {
    throw new ReceiptError(`receipt: decode ${schema.typeName}: ${(e as Error).message}`);
  }
}
