"""The agent's steps against the real processes started by ambitctl dev up."""

import grpc
import pytest

import ambit_client as ambit
from ambit.contract.v1 import contract_pb2
from ambit.error.v1 import error_pb2
from ambit.receipt.v1 import receipt_pb2

PURPOSE = "expense-refund"
CLAIM = "C-1001"  # employee-7's claim of GBP 17.40
CLAIM_OVER_APPROVAL = "C-1003"  # employee-7's claim of GBP 74.00, over the GBP 50.00 approval threshold
FIELDS = ["claim_id", "claimant_id", "receipt_total"]


def refund_args(claim, amount, payee):
    return {"claim_id": claim, "amount": amount, "payee_id": payee, "reason_code": "approved-expense"}


def test_read_propose_execute_verify(agent, agent_dir, agent_name, bind):
    task = bind(CLAIM)
    claim = agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS)
    assert claim.values == {"claim_id": CLAIM, "claimant_id": "employee-7", "receipt_total": "17.40"}
    assert list(claim.receipt.fields) == FIELDS
    assert claim.receipt.task_id == task

    amount = ambit.parse_money("GBP " + claim.values["receipt_total"])
    assert amount == ambit.money("GBP", 1740)
    d = agent.propose(task, PURPOSE, "refund", refund_args(CLAIM, amount, "employee-7"), evidence=[claim])
    assert d.allowed, d
    assert d.codes == ["ALL_APERTURES_SATISFIED"]

    effect = agent.execute(d)
    assert effect.receipt.idempotency_key == d.idempotency_key
    assert effect.receipt.call.tool == "refund"
    again = agent.execute(d)
    assert again.repeated and again.receipt.receipt_id == effect.receipt.receipt_id

    readback = agent.verify(d, effect)
    assert readback.receipt.status == receipt_pb2.READBACK_STATUS_VERIFIED, readback.receipt
    assert list(readback.receipt.findings) == []

    # Every receipt of the story verifies offline with its issuer's key.
    for envelope, message_type in (
        (claim.signed, receipt_pb2.EvidenceReceipt),
        (d.decision_receipt, receipt_pb2.DecisionReceipt),
        (d.capability, receipt_pb2.Capability),
        (effect.signed_receipt, receipt_pb2.EffectReceipt),
        (readback.signed_receipt, receipt_pb2.ReadbackReceipt),
    ):
        decoded = ambit.verify_receipt(envelope, ambit.load_public_key(agent_dir, envelope.key_id), message_type)
        assert decoded.ByteSize() > 0
    capability = ambit.verify_receipt(d.capability, ambit.load_public_key(agent_dir, d.capability.key_id), receipt_pb2.Capability)
    assert capability.holder == agent_name
    assert capability.idempotency_key == d.idempotency_key


def test_do_runs_all_three_steps(agent, bind):
    task = bind(CLAIM)
    claim = agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS)
    out = agent.do(task, PURPOSE, "refund", refund_args(CLAIM, ambit.money("GBP", 1000), "employee-7"), evidence=[claim])
    assert out.decision.allowed, out.decision
    assert out.effect.receipt.capability_id == out.readback.receipt.capability_id
    assert out.readback.receipt.status == receipt_pb2.READBACK_STATUS_VERIFIED


def test_refund_to_another_payee_is_denied(agent, bind):
    task = bind(CLAIM)
    claim = agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS)
    d = agent.propose(task, PURPOSE, "refund", refund_args(CLAIM, ambit.money("GBP", 1740), "employee-9"), evidence=[claim])
    assert d.denied, d
    assert "DESTINATION_OUTSIDE_GRANT" in d.codes
    assert not d.HasField("capability")
    reason = next(r for r in d.decision.reasons if r.code == contract_pb2.REASON_CODE_DESTINATION_OUTSIDE_GRANT)
    assert reason.aperture == contract_pb2.APERTURE_EXECUTIVE
    with pytest.raises(ambit.NotAllowed):
        agent.execute(d)
    out = agent.do(task, PURPOSE, "refund", refund_args(CLAIM, ambit.money("GBP", 1740), "employee-9"), evidence=[claim])
    assert out.decision.denied and out.effect is None and out.readback is None


def test_refund_over_the_approval_threshold_is_reviewed(agent, bind):
    task = bind(CLAIM_OVER_APPROVAL)
    claim = agent.read(task, PURPOSE, "claims_db", CLAIM_OVER_APPROVAL, FIELDS)
    amount = ambit.parse_money(claim.values["receipt_total"] + " GBP")
    assert amount == ambit.money("GBP", 7400)
    d = agent.propose(task, PURPOSE, "refund", refund_args(CLAIM_OVER_APPROVAL, amount, "employee-7"), evidence=[claim])
    assert d.review, d
    assert "APPROVAL_REQUIRED" in d.codes
    assert d.approval_id
    with pytest.raises(ambit.NotAllowed):
        agent.execute(d)


@pytest.mark.parametrize("fields", [["salary"], ["claim_id", "bank_account"]])
def test_read_outside_the_grant_is_refused(agent, bind, fields):
    task = bind(CLAIM)
    with pytest.raises(grpc.RpcError) as info:
        agent.read(task, PURPOSE, "claims_db", CLAIM, fields)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert ambit.reason(info.value) == error_pb2.ERROR_REASON_FIELDS_OUTSIDE_GRANT
    assert ambit.reason_name(info.value) == "ERROR_REASON_FIELDS_OUTSIDE_GRANT"


def test_proposal_for_an_unbound_task_is_refused(agent):
    with pytest.raises(grpc.RpcError) as info:
        agent.propose("py-never-bound", PURPOSE, "refund", refund_args(CLAIM, ambit.money("GBP", 1), "employee-7"))
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert ambit.reason(info.value) == error_pb2.ERROR_REASON_TASK_NOT_BOUND


def test_receipt_signature_fails_after_a_byte_flip(agent, agent_dir, bind):
    task = bind(CLAIM)
    claim = agent.read(task, PURPOSE, "claims_db", CLAIM, FIELDS)
    key = ambit.load_public_key(agent_dir, claim.signed.key_id)
    receipt = ambit.verify_receipt(claim.signed, key, receipt_pb2.EvidenceReceipt)
    assert receipt.receipt_id == claim.receipt.receipt_id
    assert receipt.issuer == claim.signed.key_id

    tampered = receipt_pb2.Envelope()
    tampered.CopyFrom(claim.signed)
    payload = bytearray(tampered.payload)
    payload[len(payload) // 2] ^= 0x01
    tampered.payload = bytes(payload)
    with pytest.raises(ambit.ReceiptError, match="bad signature"):
        ambit.verify_receipt(tampered, key, receipt_pb2.EvidenceReceipt)

    resigned = receipt_pb2.Envelope()
    resigned.CopyFrom(claim.signed)
    resigned.signature = bytes([resigned.signature[0] ^ 0x80]) + resigned.signature[1:]
    with pytest.raises(ambit.ReceiptError):
        ambit.verify_receipt(resigned, key, receipt_pb2.EvidenceReceipt)
    with pytest.raises(ambit.ReceiptError, match="payload type"):
        ambit.verify_receipt(claim.signed, key, receipt_pb2.EffectReceipt)


def test_a_server_with_another_role_is_refused(stack, agent_dir, agent_name):
    with pytest.raises(ambit.ServerIdentityError, match="role evidence-adapter"):
        ambit.channel(stack["evidence"], agent_dir, agent_name, role=ambit.ROLE_KERNEL)
    name, role = ambit.server_identity(stack["kernel"]["agent"], agent_dir, agent_name)
    assert role == ambit.ROLE_KERNEL
