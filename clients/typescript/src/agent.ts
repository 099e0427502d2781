// The agent's four steps: read granted evidence, propose a call of a
// declared tool citing it, execute what is allowed and have it read back.

import { create } from "@bufbuild/protobuf";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { ActionService, type ExecuteResponse } from "./gen/ambit/action/v1/action_pb.js";
import {
  AgentService,
  type GetSelfViewResponse,
  type RequestBoundaryChangeResponse,
  type SubmitProposalResponse,
} from "./gen/ambit/agent/v1/agent_pb.js";
import { Outcome as Verdict, ReasonCode, ToolCallSchema } from "./gen/ambit/contract/v1/contract_pb.js";
import { EvidenceService } from "./gen/ambit/evidence/v1/evidence_pb.js";
import type { Envelope, EvidenceReceipt } from "./gen/ambit/receipt/v1/receipt_pb.js";
import { VerifierService, type VerifyResponse } from "./gen/ambit/verifier/v1/verifier_pb.js";
import { argumentsJson, type ArgumentValue } from "./json.js";
import { channel, Role, type Channel } from "./transport.js";

/** Where an agent's processes listen (HOST:PORT each). */
export interface Addresses {
  kernel: string;
  evidence: string;
  action: string;
  verifier: string;
}

/** One granted read. */
export interface Evidence {
  /** The released values: text, numbers and booleans. */
  values: JsonObject;
  /** The decoded receipt, for convenience. */
  receipt: EvidenceReceipt | undefined;
  /** The signed receipt: the proof to cite. */
  signed: Envelope | undefined;
}

/** One call to propose. */
export interface Proposal {
  task: string;
  purpose: string;
  tool: string;
  /** The arguments object; money as money(...) (bigint minor units stay exact). */
  args: { readonly [key: string]: ArgumentValue | undefined };
  /** The reads that support the call. */
  evidence?: readonly Evidence[];
  /** An approved approval for exactly this call. */
  approvalId?: string;
  /** Makes the submission idempotent: a retry after a lost reply gets the first answer. */
  requestId?: string;
}

/** The kernel's answer to a proposal. */
export class Decision {
  constructor(readonly response: SubmitProposalResponse) {}

  /** An ALLOW with its capability. */
  get allowed(): boolean {
    return this.response.decision?.outcome === Verdict.ALLOW && this.response.capability !== undefined;
  }

  /** A REVIEW; approvalId names the approval when one can settle it. */
  get review(): boolean {
    return this.response.decision?.outcome === Verdict.REVIEW;
  }

  get denied(): boolean {
    return this.response.decision?.outcome === Verdict.DENY;
  }

  get approvalId(): string {
    return this.response.approvalId;
  }

  /**
   * The reasons' codes as the .proto names them without the prefix, e.g.
   * "AMOUNT_EXCEEDS_HARD_LIMIT" (a failed constraint as
   * "CONSTRAINT_VIOLATED:<its code>").
   */
  get codes(): string[] {
    return (this.response.decision?.reasons ?? []).map((r) => {
      const code = ReasonCode[r.code] ?? String(r.code);
      return r.constraint ? `${code}:${r.constraint}` : code;
    });
  }
}

/** A call taken through all three steps; effect and readback are absent unless allowed. */
export interface Outcome {
  decision: Decision;
  effect?: ExecuteResponse;
  readback?: VerifyResponse;
}

/** Thrown by execute for a decision that is not an ALLOW: nothing is executed. */
export class NotAllowedError extends Error {
  override name = "NotAllowedError";
}

/** Options of an Agent. */
export interface AgentOptions {
  /** Bounds every call (default 30 s). */
  timeoutMs?: number;
}

/** Works for one agent identity over four transports. */
export class Agent {
  private readonly kernel: Client<typeof AgentService>;
  private readonly evidence: Client<typeof EvidenceService>;
  private readonly action: Client<typeof ActionService>;
  private readonly verifier: Client<typeof VerifierService>;
  private readonly timeoutMs: number;

  /** An Agent over transports you made (and close). */
  constructor(
    transports: { kernel: Transport; evidence: Transport; action: Transport; verifier: Transport },
    options: AgentOptions = {},
    private readonly onClose: () => void = () => {},
  ) {
    this.kernel = createClient(AgentService, transports.kernel);
    this.evidence = createClient(EvidenceService, transports.evidence);
    this.action = createClient(ActionService, transports.action);
    this.verifier = createClient(VerifierService, transports.verifier);
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Closes the connections dial made. */
  close(): void {
    this.onClose();
  }

  /**
   * Asks the evidence adapter for fields of one record, for a task and
   * purpose. A field or source outside the grant is refused
   * (PermissionDenied, naming it) and nothing is read.
   */
  async read(task: string, purpose: string, source: string, key: string, fields: readonly string[]): Promise<Evidence> {
    const resp = await this.evidence.read(
      { taskId: task, purpose, source, recordKey: key, fields: [...fields] },
      { timeoutMs: this.timeoutMs },
    );
    return { values: resp.values ?? {}, receipt: resp.receipt, signed: resp.signedReceipt };
  }

  /** Submits a call of a declared tool, citing the reads that support it. */
  async propose(p: Proposal): Promise<Decision> {
    const evidence: Envelope[] = [];
    for (const e of p.evidence ?? []) {
      if (e.signed === undefined) {
        throw new Error(`propose ${p.tool}: cited evidence carries no signed receipt`);
      }
      evidence.push(e.signed);
    }
    const resp = await this.kernel.submitProposal(
      {
        taskId: p.task,
        purpose: p.purpose,
        approvalId: p.approvalId ?? "",
        requestId: p.requestId ?? "",
        call: create(ToolCallSchema, { tool: p.tool, argumentsJson: argumentsJson(p.args) }),
        evidence,
      },
      { timeoutMs: this.timeoutMs },
    );
    return new Decision(resp);
  }

  /** Has the action adapter perform exactly the allowed call; a retry returns the first effect's receipt. */
  async execute(d: Decision): Promise<ExecuteResponse> {
    if (!d.allowed) {
      throw new NotAllowedError(`the decision is not ALLOW (${d.codes.join(", ")}): nothing executed`);
    }
    return this.action.execute(
      { capability: d.response.capability, idempotencyKey: d.response.idempotencyKey },
      { timeoutMs: this.timeoutMs },
    );
  }

  /** Has the verifier read the effect back. */
  async verify(d: Decision, effect: ExecuteResponse): Promise<VerifyResponse> {
    return this.verifier.verify(
      { capability: d.response.capability, effectReceipt: effect.signedReceipt },
      { timeoutMs: this.timeoutMs },
    );
  }

  /** Proposes, and on ALLOW executes and verifies; on REVIEW or DENY returns the decision alone. */
  async do(p: Proposal): Promise<Outcome> {
    const decision = await this.propose(p);
    if (!decision.allowed) {
      return { decision };
    }
    const effect = await this.execute(decision);
    const readback = await this.verify(decision, effect);
    return { decision, effect, readback };
  }

  /** Operational self-facts the contract's reflexive aperture shows. */
  async selfView(task: string, facts: readonly string[]): Promise<GetSelfViewResponse> {
    return this.kernel.getSelfView({ taskId: task, facts: [...facts] }, { timeoutMs: this.timeoutMs });
  }

  /** Files a request to widen the task's boundary as a governance item; the running contract does not change. */
  async requestBoundaryChange(task: string, description: string): Promise<RequestBoundaryChangeResponse> {
    return this.kernel.requestBoundaryChange({ taskId: task, description }, { timeoutMs: this.timeoutMs });
  }
}

/** Options of dial. */
export interface DialOptions extends AgentOptions {
  /** Check that each server carries the role it is dialled for (default true). */
  checkRoles?: boolean;
}

/**
 * An Agent for identity with its key folder (DIR/<identity> as `ambitctl
 * dev init` lays it out), for the kernel's agent listener and the three
 * adapters. Connections are made on the first call.
 */
export function dial(identityDir: string, identity: string, addresses: Addresses, options: DialOptions = {}): Agent {
  const check = options.checkRoles ?? true;
  const open: Channel[] = [];
  const to = (address: string, role: Role): Transport => {
    const c = channel(address, identityDir, identity, check ? role : undefined);
    open.push(c);
    return c.transport;
  };
  const transports = {
    kernel: to(addresses.kernel, Role.Kernel),
    evidence: to(addresses.evidence, Role.Evidence),
    action: to(addresses.action, Role.Action),
    verifier: to(addresses.verifier, Role.Verifier),
  };
  return new Agent(transports, options, () => open.forEach((c) => c.close()));
}
