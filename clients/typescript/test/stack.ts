// The live stack for the tests: `bin/ambitctl dev up DIR`, or the stack.json
// named by AMBIT_STACK when one is already running.

import { create, fromJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient, type Client } from "@connectrpc/connect";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import { parse } from "yaml";
import { channel, Role, type Channel } from "../src/index.js";
import { ContractSchema } from "../src/gen/ambit/contract/v1/contract_pb.js";
import { GovernanceService } from "../src/gen/ambit/kernel/v1/governance_pb.js";
import {
  AuthorityLevel,
  CanonClass,
  CanonItemSchema,
  ConflictState,
  ItemKind,
  Lifetime,
  PromotionState,
  Scope,
  SourceOrigin,
} from "../src/gen/ambit/ledger/v1/ledger_pb.js";

// This file runs from dist/test/: the repository is four levels up.
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const AMBITCTL = join(REPO, "bin", "ambitctl");
const CONTRACT = join(REPO, "examples", "expense-refund", "contract.yaml");
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;
const CALL = { timeoutMs: 30_000 };
export const GOVERNANCE = "policy-owner";
export const PURPOSE = "expense-refund";

/** stack.json as `ambitctl dev up` writes it. */
export interface Stack {
  pki: string;
  kernel: { agent: string; adapter: string; governance: string };
  evidence: string;
  action: string;
  verifier: string;
  agents: string[];
  stackFile: string;
}

/**
 * Why the live tests cannot run (bin/ambitctl has no `dev up`), or false.
 * A missing bin/ambitctl is an error: make build makes it.
 */
export function skipLive(): string | false {
  if (process.env.AMBIT_STACK) {
    return false;
  }
  if (!existsSync(AMBITCTL)) {
    throw new Error(`${AMBITCTL} is missing: run make build`);
  }
  const help = spawnSync(AMBITCTL, ["--help"], { encoding: "utf8", timeout: 30_000 });
  return `${help.stdout}${help.stderr}`.includes("dev up")
    ? false
    : `${AMBITCTL} has no \`dev up\` command yet: the live tests need it to start the stack`;
}

/** A started stack and how to stop it. */
export interface Running {
  stack: Stack;
  stop(): Promise<void>;
}

function readStack(file: string): Stack | undefined {
  try {
    return { ...JSON.parse(readFileSync(file, "utf8")), stackFile: file };
  } catch {
    return undefined;
  }
}

async function exited(proc: ChildProcess, ms: number): Promise<boolean> {
  if (proc.exitCode !== null || proc.signalCode !== null) {
    return true;
  }
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), ms);
    proc.once("exit", () => {
      clearTimeout(timer);
      done(true);
    });
  });
}

/** Starts `ambitctl dev up` (or takes AMBIT_STACK) and waits for stack.json. */
export async function startStack(): Promise<Running> {
  if (process.env.AMBIT_STACK) {
    const stack = readStack(process.env.AMBIT_STACK);
    if (stack === undefined) {
      throw new Error(`AMBIT_STACK=${process.env.AMBIT_STACK} is not a readable stack.json`);
    }
    return { stack, stop: async () => {} };
  }
  const root = mkdtempSync(join(tmpdir(), "ambit-ts-stack-"));
  const dir = join(root, "dev");
  const logFile = join(root, "dev-up.log");
  const log = openSync(logFile, "w");
  const proc = spawn(AMBITCTL, ["dev", "up", dir], { stdio: ["ignore", log, log] });
  closeSync(log);
  const stop = async () => {
    proc.kill("SIGTERM");
    if (!(await exited(proc, STOP_TIMEOUT_MS))) {
      proc.kill("SIGKILL");
      await exited(proc, STOP_TIMEOUT_MS);
      throw new Error(`ambitctl dev up did not stop within ${STOP_TIMEOUT_MS} ms of SIGTERM:\n${readFileSync(logFile, "utf8")}`);
    }
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`ambitctl dev up exited (${proc.exitCode ?? proc.signalCode}) before writing stack.json:\n${readFileSync(logFile, "utf8")}`);
    }
    const stack = readStack(join(dir, "stack.json"));
    if (stack !== undefined) {
      return { stack, stop };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`ambitctl dev up wrote no stack.json within ${START_TIMEOUT_MS} ms:\n${readFileSync(logFile, "utf8")}`);
}

/** A governance client as the policy owner. */
export function governance(stack: Stack): { client: Client<typeof GovernanceService>; channel: Channel } {
  const ch = channel(stack.kernel.governance, join(stack.pki, GOVERNANCE), GOVERNANCE, Role.Kernel);
  return { client: createClient(GovernanceService, ch.transport), channel: ch };
}

/**
 * Proposes, promotes and binds a fresh task on claim for agent under the
 * example's contract (valid four hours), and returns the task id.
 */
export async function bindTask(gov: Client<typeof GovernanceService>, claim: string, agent: string): Promise<string> {
  const task = `ts-${claim}-${randomUUID().slice(0, 12)}`;
  const contract = fromJson(ContractSchema, parse(readFileSync(CONTRACT, "utf8")));
  if (contract.binding?.record === undefined) {
    throw new Error(`${CONTRACT}: no binding.record`);
  }
  contract.binding.taskId = task;
  contract.binding.record.key = claim;
  contract.binding.validUntil = timestampFromDate(new Date(Date.now() + 4 * 3600_000));
  const id = `ctr-${task}`;
  await gov.proposeItem({
    item: create(CanonItemSchema, {
      canonItemId: id,
      sourceOrigin: SourceOrigin.POLICY,
      authorityLevel: AuthorityLevel.OWNER,
      provenanceRef: "policy-repo:examples/expense-refund/contract.yaml",
      scope: Scope.TASK,
      lifetime: Lifetime.TASK,
      promotionState: PromotionState.PROPOSED,
      conflictState: ConflictState.NONE,
      kind: ItemKind.CONTRACT,
      contract,
    }),
  }, CALL);
  const promoted = await gov.promoteItem({ canonItemId: id }, CALL);
  if (promoted.item?.class !== CanonClass.CANONICAL) {
    throw new Error(`contract ${id} is ${CanonClass[promoted.item?.class ?? 0]} after promotion: ${promoted.item?.reasons}`);
  }
  await gov.bindTask({ taskId: task, contractItemId: id, agent }, CALL);
  return task;
}
