"""The agent's four steps: read granted evidence, propose a call of a
declared tool citing it, execute what is allowed and have it read back."""

import json
from dataclasses import dataclass

from ambit.action.v1 import action_pb2, action_pb2_grpc
from ambit.agent.v1 import agent_pb2, agent_pb2_grpc
from ambit.contract.v1 import contract_pb2
from ambit.evidence.v1 import evidence_pb2, evidence_pb2_grpc
from ambit.verifier.v1 import verifier_pb2, verifier_pb2_grpc
from google.protobuf import json_format

from .connect import ROLE_ACTION, ROLE_EVIDENCE, ROLE_KERNEL, ROLE_VERIFIER, channel
from .money import Money


class NotAllowed(Exception):
    """Raised by :meth:`Agent.execute` for a decision that is not an ALLOW:
    nothing is executed."""


@dataclass(frozen=True)
class Addresses:
    """Where an agent's processes listen (HOST:PORT each)."""

    kernel: str
    evidence: str
    action: str
    verifier: str


@dataclass
class Evidence:
    """One granted read."""

    #: The released values: text, numbers (as floats, the Struct's numbers)
    #: and booleans.
    values: dict
    #: The decoded receipt, for convenience.
    receipt: object
    #: The signed receipt: the proof to cite.
    signed: object


class Decision:
    """The kernel's answer to a proposal. Attributes of the
    SubmitProposalResponse (decision_id, capability, approval_id,
    idempotency_key…) are read through."""

    def __init__(self, response):
        self.response = response

    def __getattr__(self, name):
        if name == "response":  # not yet set (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self.response, name)

    @property
    def outcome(self):
        return self.response.decision.outcome

    @property
    def allowed(self):
        """An ALLOW with its capability."""
        return self.outcome == contract_pb2.OUTCOME_ALLOW and self.response.HasField("capability")

    @property
    def review(self):
        """A REVIEW; approval_id names the approval when one can settle it."""
        return self.outcome == contract_pb2.OUTCOME_REVIEW

    @property
    def denied(self):
        return self.outcome == contract_pb2.OUTCOME_DENY

    @property
    def codes(self):
        """The reasons' codes, e.g. "AMOUNT_EXCEEDS_HARD_LIMIT" (a failed
        constraint as "CONSTRAINT_VIOLATED:<its code>")."""
        out = []
        for r in self.response.decision.reasons:
            code = contract_pb2.ReasonCode.Name(r.code).removeprefix("REASON_CODE_")
            out.append(f"{code}:{r.constraint}" if r.constraint else code)
        return out

    def __repr__(self):
        return f"Decision({contract_pb2.Outcome.Name(self.outcome)}, {self.codes})"


@dataclass
class Outcome:
    """A call taken through all three steps; effect and readback stay None
    when the decision is not an ALLOW."""

    decision: Decision
    effect: object = None
    readback: object = None


def _json_default(value):
    if isinstance(value, Money):
        return value.to_json()
    raise TypeError(f"{type(value).__name__} is not a JSON argument value")


def arguments_json(args):
    """A tool call's arguments as JSON: integers stay exact; Money becomes
    {"currency_code", "minor_units"}; NaN and infinities are refused."""
    return json.dumps(args, default=_json_default, allow_nan=False, separators=(",", ":"), ensure_ascii=False)


class Agent:
    """Works for one agent identity over four channels: the kernel's agent
    listener, the evidence adapter, the action adapter and the verifier.
    ``timeout`` (seconds) bounds every call."""

    def __init__(self, kernel, evidence, action, verifier, timeout=30.0):
        self._channels = (kernel, evidence, action, verifier)
        self._kernel = agent_pb2_grpc.AgentServiceStub(kernel)
        self._evidence = evidence_pb2_grpc.EvidenceServiceStub(evidence)
        self._action = action_pb2_grpc.ActionServiceStub(action)
        self._verifier = verifier_pb2_grpc.VerifierServiceStub(verifier)
        self.timeout = timeout

    def close(self):
        for c in self._channels:
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read(self, task, purpose, source, key, fields):
        """Asks the evidence adapter for fields of one record, for a task
        and purpose. A field or source outside the grant is refused
        (PermissionDenied, naming it) and nothing is read."""
        resp = self._evidence.Read(
            evidence_pb2.ReadRequest(task_id=task, purpose=purpose, source=source, record_key=key, fields=list(fields)),
            timeout=self.timeout,
        )
        return Evidence(values=json_format.MessageToDict(resp.values), receipt=resp.receipt, signed=resp.signed_receipt)

    def propose(self, task, purpose, tool, args, evidence=(), approval_id="", request_id=""):
        """Submits a call of a declared tool, citing evidence (the reads
        that support it). ``args`` is the arguments object (a dict; see
        :func:`arguments_json`). With ``request_id`` a retry after a lost
        reply gets the first answer."""
        req = agent_pb2.SubmitProposalRequest(
            task_id=task,
            purpose=purpose,
            approval_id=approval_id,
            request_id=request_id,
            call=contract_pb2.ToolCall(tool=tool, arguments_json=arguments_json(args)),
            evidence=[e.signed for e in evidence],
        )
        return Decision(self._kernel.SubmitProposal(req, timeout=self.timeout))

    def execute(self, decision):
        """Has the action adapter perform exactly the allowed call. A retry
        (the same decision) returns the first effect's receipt."""
        if not decision.allowed:
            raise NotAllowed(f"the decision is not ALLOW ({decision.codes}): nothing executed")
        return self._action.Execute(
            action_pb2.ExecuteRequest(capability=decision.capability, idempotency_key=decision.idempotency_key),
            timeout=self.timeout,
        )

    def verify(self, decision, effect):
        """Has the verifier read the effect back."""
        return self._verifier.Verify(
            verifier_pb2.VerifyRequest(capability=decision.capability, effect_receipt=effect.signed_receipt),
            timeout=self.timeout,
        )

    def do(self, task, purpose, tool, args, evidence=(), approval_id="", request_id=""):
        """Proposes, and on ALLOW executes and verifies. On REVIEW or DENY
        it returns the decision alone and nothing is executed."""
        d = self.propose(task, purpose, tool, args, evidence, approval_id, request_id)
        out = Outcome(decision=d)
        if d.allowed:
            out.effect = self.execute(d)
            out.readback = self.verify(d, out.effect)
        return out

    def self_view(self, task, facts):
        """Operational self-facts the contract's reflexive aperture shows."""
        return self._kernel.GetSelfView(agent_pb2.GetSelfViewRequest(task_id=task, facts=list(facts)), timeout=self.timeout)

    def request_boundary_change(self, task, description):
        """Files a request to widen the task's boundary as a governance
        item; the running contract does not change."""
        return self._kernel.RequestBoundaryChange(
            agent_pb2.RequestBoundaryChangeRequest(task_id=task, description=description), timeout=self.timeout
        )


def dial(identity_dir, identity, addresses, check_roles=True, timeout=30.0):
    """An Agent for ``identity`` with its key folder (DIR/<identity> as
    ``ambitctl dev init`` lays it out), connected to the kernel's agent
    listener and the three adapters; with ``check_roles`` each server must
    present the role it is dialled for."""

    def role(r):
        return r if check_roles else None

    channels = []
    try:
        for address, r in (
            (addresses.kernel, ROLE_KERNEL),
            (addresses.evidence, ROLE_EVIDENCE),
            (addresses.action, ROLE_ACTION),
            (addresses.verifier, ROLE_VERIFIER),
        ):
            channels.append(channel(address, identity_dir, identity, role(r)))
    except BaseException:
        for c in channels:
            c.close()
        raise
    return Agent(*channels, timeout=timeout)
