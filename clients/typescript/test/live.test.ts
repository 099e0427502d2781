// The agent's steps against the real processes started by ambitctl dev up,
// and the README's TypeScript snippet run against them.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { DescMessage } from "@bufbuild/protobuf";
import {
  NotAllowedError,
  ReceiptError,
  Role,
  channel,
  dial,
  loadPublicKey,
  money,
  parseMoney,
  reason,
  reasonName,
  verifyReceipt,
  type Agent,
} from "../src/index.js";
import { ErrorReason } from "../src/gen/ambit/error/v1/error_pb.js";
import { Aperture, ReasonCode } from "../src/gen/ambit/contract/v1/contract_pb.js";
import { AgentService } from "../src/gen/ambit/agent/v1/agent_pb.js";
import {
  CapabilitySchema,
  DecisionReceiptSchema,
  EffectReceiptSchema,
  EvidenceReceiptSchema,
  ReadbackReceiptSchema,
  ReadbackStatus,
  type Envelope,
} from "../src/gen/ambit/receipt/v1/receipt_pb.js";
import { PURPOSE, REPO, bindTask, governance, skipLive, startStack, type Running } from "./stack.js";

const CLAIM = "C-1001"; // employee-7's claim of GBP 17.40
const CLAIM_OVER_APPROVAL = "C-1003"; // employee-7's claim of GBP 74.00, over the GBP 50.00 approval threshold
const FIELDS = ["claim_id", "claimant_id", "receipt_total"];

function refundArgs(claim: string, amount: ReturnType<typeof money>, payee: string) {
  return { claim_id: claim, amount, payee_id: payee, reason_code: "approved-expense" };
}

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ConnectError, `want a ConnectError, got ${err}`);
    return err;
  }
  assert.fail("the call succeeded");
}

describe("live stack", { skip: skipLive() }, () => {
  let running: Running;
  let gov: ReturnType<typeof governance>;
  let agent: Agent;
  let agentName: string;
  let agentDir: string;
  const bind = (claim: string) => bindTask(gov.client, claim, agentName);

  before(async () => {
    running = await startStack();
    const s = running.stack;
    agentName = s.agents[0];
    agentDir = join(s.pki, agentName);
    gov = governance(s);
    agent = dial(agentDir, agentName, { kernel: s.kernel.agent, evidence: s.evidence, action: s.action, verifier: s.verifier });
  });

  after(async () => {
    agent?.close();
    gov?.channel.close();
    await running?.stop();
  });

  test("read, propose, execute, verify", async () => {
    const task = await bind(CLAIM);
    const claim = await agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS);
    assert.deepEqual(claim.values, { claim_id: CLAIM, claimant_id: "employee-7", receipt_total: "17.40" });
    assert.deepEqual(claim.receipt?.fields, FIELDS);
    assert.equal(claim.receipt?.taskId, task);

    const amount = parseMoney(`GBP ${claim.values.receipt_total}`);
    assert.deepEqual(amount, money("GBP", 1740));
    const d = await agent.propose({ task, purpose: PURPOSE, tool: "refund", args: refundArgs(CLAIM, amount, "employee-7"), evidence: [claim] });
    assert.ok(d.allowed, d.codes.join(", "));
    assert.deepEqual(d.codes, ["ALL_APERTURES_SATISFIED"]);

    const effect = await agent.execute(d);
    assert.equal(effect.receipt?.idempotencyKey, d.response.idempotencyKey);
    assert.equal(effect.receipt?.call?.tool, "refund");
    const again = await agent.execute(d);
    assert.ok(again.repeated);
    assert.equal(again.receipt?.receiptId, effect.receipt?.receiptId);

    const readback = await agent.verify(d, effect);
    assert.equal(readback.receipt?.status, ReadbackStatus.VERIFIED, JSON.stringify(readback.receipt?.findings));
    assert.deepEqual(readback.receipt?.findings, []);

    // Every receipt of the story verifies offline with its issuer's key.
    const signed: [Envelope | undefined, DescMessage][] = [
      [claim.signed, EvidenceReceiptSchema],
      [d.response.decisionReceipt, DecisionReceiptSchema],
      [d.response.capability, CapabilitySchema],
      [effect.signedReceipt, EffectReceiptSchema],
      [readback.signedReceipt, ReadbackReceiptSchema],
    ];
    for (const [env, schema] of signed) {
      verifyReceipt(env, loadPublicKey(agentDir, env?.keyId ?? ""), schema);
    }
    const cap = verifyReceipt(d.response.capability, loadPublicKey(agentDir, d.response.capability?.keyId ?? ""), CapabilitySchema);
    assert.equal(cap.holder, agentName);
    assert.equal(cap.idempotencyKey, d.response.idempotencyKey);
  });

  test("do runs all three steps", async () => {
    const task = await bind(CLAIM);
    const claim = await agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS);
    const out = await agent.do({ task, purpose: PURPOSE, tool: "refund", args: refundArgs(CLAIM, money("GBP", 1000), "employee-7"), evidence: [claim] });
    assert.ok(out.decision.allowed, out.decision.codes.join(", "));
    assert.equal(out.effect?.receipt?.capabilityId, out.readback?.receipt?.capabilityId);
    assert.equal(out.readback?.receipt?.status, ReadbackStatus.VERIFIED);
  });

  test("a refund to another payee is denied", async () => {
    const task = await bind(CLAIM);
    const claim = await agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS);
    const p = { task, purpose: PURPOSE, tool: "refund", args: refundArgs(CLAIM, money("GBP", 1740), "employee-9"), evidence: [claim] };
    const d = await agent.propose(p);
    assert.ok(d.denied, d.codes.join(", "));
    assert.ok(d.codes.includes("DESTINATION_OUTSIDE_GRANT"), d.codes.join(", "));
    assert.equal(d.response.capability, undefined);
    const r = d.response.decision?.reasons.find((x) => x.code === ReasonCode.DESTINATION_OUTSIDE_GRANT);
    assert.equal(r?.aperture, Aperture.EXECUTIVE);
    await assert.rejects(agent.execute(d), NotAllowedError);
    const out = await agent.do(p);
    assert.ok(out.decision.denied);
    assert.equal(out.effect, undefined);
    assert.equal(out.readback, undefined);
  });

  test("a refund over the approval threshold is reviewed", async () => {
    const task = await bind(CLAIM_OVER_APPROVAL);
    const claim = await agent.read(task, PURPOSE, "claims_db", CLAIM_OVER_APPROVAL, FIELDS);
    const amount = parseMoney(`${claim.values.receipt_total} GBP`);
    assert.deepEqual(amount, money("GBP", 7400));
    const d = await agent.propose({ task, purpose: PURPOSE, tool: "refund", args: refundArgs(CLAIM_OVER_APPROVAL, amount, "employee-7"), evidence: [claim] });
    assert.ok(d.review, d.codes.join(", "));
    assert.ok(d.codes.includes("APPROVAL_REQUIRED"), d.codes.join(", "));
    assert.notEqual(d.approvalId, "");
    await assert.rejects(agent.execute(d), NotAllowedError);
  });

  for (const fields of [["salary"], ["claim_id", "bank_account"]]) {
    test(`a read outside the grant is refused: ${fields}`, async () => {
      const task = await bind(CLAIM);
      const err = await refusal(agent.read(task, PURPOSE, "claims_db", CLAIM, fields));
      assert.equal(err.code, Code.PermissionDenied);
      assert.equal(reason(err), ErrorReason.FIELDS_OUTSIDE_GRANT);
      assert.equal(reasonName(err), "ERROR_REASON_FIELDS_OUTSIDE_GRANT");
    });
  }

  test("a proposal for an unbound task is refused", async () => {
    const err = await refusal(agent.propose({ task: "ts-never-bound", purpose: PURPOSE, tool: "refund", args: refundArgs(CLAIM, money("GBP", 1), "employee-7") }));
    assert.equal(err.code, Code.FailedPrecondition);
    assert.equal(reason(err), ErrorReason.TASK_NOT_BOUND);
  });

  test("a receipt's signature fails after a byte flip", async () => {
    const task = await bind(CLAIM);
    const claim = await agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS);
    const env = claim.signed;
    assert.ok(env);
    const key = loadPublicKey(agentDir, env.keyId);
    const receipt = verifyReceipt(env, key, EvidenceReceiptSchema);
    assert.equal(receipt.receiptId, claim.receipt?.receiptId);
    assert.equal(receipt.issuer, env.keyId);

    const payload = Uint8Array.from(env.payload);
    payload[payload.length >> 1] ^= 0x01;
    assert.throws(() => verifyReceipt({ ...env, payload }, key, EvidenceReceiptSchema), /bad signature/);
    const signature = Uint8Array.from(env.signature);
    signature[0] ^= 0x80;
    assert.throws(() => verifyReceipt({ ...env, signature }, key, EvidenceReceiptSchema), ReceiptError);
    assert.throws(() => verifyReceipt(env, key, EffectReceiptSchema), /payload type/);
  });

  test("a server with another role is refused", async () => {
    const s = running.stack;
    const wrong = channel(s.evidence, agentDir, agentName, Role.Kernel);
    try {
      const err = await refusal(createClient(AgentService, wrong.transport).getSelfView({ taskId: "x", facts: ["expiry"] }));
      assert.match(err.message, /has role evidence-adapter, want kernel/);
    } finally {
      wrong.close();
    }
  });

  test("the README's TypeScript snippet runs", async () => {
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const marker = "<!-- snippet: typescript -->";
    const start = readme.indexOf("```ts\n", readme.indexOf(marker));
    assert.ok(readme.includes(marker) && start >= 0, `README.md has no ${marker} followed by a ts block`);
    const code = readme.slice(start + "```ts\n".length, readme.indexOf("```\n", start + 1));
    // Inside the package, so that it imports itself by name as a user would.
    const dir = join(REPO, "clients", "typescript", "dist", "readme");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "snippet.ts"), code);
    writeFileSync(join(dir, "snippet.mjs"), code);
    const tsc = spawnSync(
      join(REPO, "clients", "typescript", "node_modules", ".bin", "tsc"),
      ["--ignoreConfig", "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext", "--types", "node", join(dir, "snippet.ts")],
      { encoding: "utf8", timeout: 120_000 },
    );
    assert.equal(tsc.status, 0, `the snippet does not type-check:\n${tsc.stdout}${tsc.stderr}`);
    const task = await bind(CLAIM);
    const run = spawnSync(process.execPath, [join(dir, "snippet.mjs")], {
      encoding: "utf8",
      timeout: 120_000,
      env: { ...process.env, AMBIT_STACK: running.stack.stackFile, AMBIT_TASK: task },
    });
    assert.equal(run.status, 0, `the snippet failed:\n${run.stdout}${run.stderr}`);
    assert.match(run.stdout, /ALL_APERTURES_SATISFIED/);
    assert.match(run.stdout, /^true true$/m);
    assert.match(run.stdout, /^VERIFIED$/m);
    assert.match(run.stdout, /^VERIFIED 0$/m);
    assert.match(run.stdout, /^true$/m);
    assert.match(run.stdout, /^ERROR_REASON_FIELDS_OUTSIDE_GRANT$/m);
  });
});
