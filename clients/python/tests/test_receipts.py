"""Receipt verification offline: a Go-signed vector and fresh keys."""

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import ambit_client as ambit
from ambit.receipt.v1 import receipt_pb2
from google.protobuf import json_format

VECTOR = json.loads((Path(__file__).resolve().parents[2] / "testdata" / "envelope.json").read_text())


def vector():
    env = json_format.ParseDict(VECTOR["envelope"], receipt_pb2.Envelope())
    return env, bytes.fromhex(VECTOR["public_key_hex"])


def sign(key, message, key_id="action"):
    payload = message.SerializeToString(deterministic=True)
    typ = message.DESCRIPTOR.full_name
    return receipt_pb2.Envelope(payload_type=typ, payload=payload, key_id=key_id, signature=key.sign(ambit.signing_input(typ, payload)))


def test_go_signed_vector_verifies():
    env, pub = vector()
    got = ambit.verify_receipt(env, pub, receipt_pb2.EffectReceipt)
    assert got == json_format.ParseDict(VECTOR["receipt"], receipt_pb2.EffectReceipt())


def flipped(env, field, index):
    out = receipt_pb2.Envelope()
    out.CopyFrom(env)
    data = bytearray(getattr(out, field))
    data[index] ^= 0x01
    setattr(out, field, bytes(data))
    return out


def relabelled(env):
    out = receipt_pb2.Envelope()
    out.CopyFrom(env)
    out.payload_type = "ambit.receipt.v1.ReadbackReceipt"
    return out


@pytest.mark.parametrize(
    "name, make, message_type",
    [
        ("flipped payload byte", lambda e: flipped(e, "payload", 3), receipt_pb2.EffectReceipt),
        ("flipped signature byte", lambda e: flipped(e, "signature", 0), receipt_pb2.EffectReceipt),
        ("relabelled type", relabelled, receipt_pb2.ReadbackReceipt),
        ("decoded as another type", lambda e: e, receipt_pb2.ReadbackReceipt),
        ("missing", lambda e: None, receipt_pb2.EffectReceipt),
    ],
)
def test_tampered_vector_is_refused(name, make, message_type):
    env, pub = vector()
    with pytest.raises(ambit.ReceiptError):
        ambit.verify_receipt(make(env), pub, message_type)


def test_another_key_is_refused():
    env, _ = vector()
    other = Ed25519PrivateKey.generate().public_key()
    with pytest.raises(ambit.ReceiptError, match="bad signature"):
        ambit.verify_receipt(env, other, receipt_pb2.EffectReceipt)


def test_signed_here_verifies_with_a_pem_key(tmp_path):
    key = Ed25519PrivateKey.generate()
    (tmp_path / "verifier.sign.pub").write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    receipt = receipt_pb2.ReadbackReceipt(receipt_id="rb-1", status=receipt_pb2.READBACK_STATUS_VERIFIED)
    env = sign(key, receipt, "verifier")
    assert ambit.verify_receipt(env, ambit.load_public_key(str(tmp_path), "verifier"), receipt_pb2.ReadbackReceipt) == receipt


def test_signing_input_is_length_prefixed():
    # "ab" + "c" and "a" + "bc" must sign differently.
    assert ambit.signing_input("ab", b"c") != ambit.signing_input("a", b"bc")
    assert ambit.signing_input("T", b"xy") == b"ambit-envelope-v1" + (1).to_bytes(8, "big") + b"T" + (2).to_bytes(8, "big") + b"xy"


BATCH = json.loads((Path(__file__).resolve().parents[2] / "testdata" / "envelope-batch.json").read_text())


def batch_vector():
    out = []
    for entry in BATCH["batch"]:
        env = json_format.ParseDict(entry["envelope"], receipt_pb2.Envelope())
        message_type = getattr(receipt_pb2, env.payload_type.rsplit(".", 1)[1])
        out.append((env, message_type, json_format.ParseDict(entry["record"], message_type())))
    return out, bytes.fromhex(BATCH["public_key_hex"])


def test_go_signed_batch_verifies():
    records, pub = batch_vector()
    assert len({env.signature for env, _, _ in records}) == 1
    for env, message_type, want in records:
        assert ambit.verify_receipt(env, pub, message_type) == want


def edited(env, edit):
    out = receipt_pb2.Envelope()
    out.CopyFrom(env)
    edit(out)
    return out


def other_payload(e):
    e.payload = batch_vector()[0][2][0].payload


@pytest.mark.parametrize(
    "name, edit",
    [
        ("flipped payload byte", lambda e: setattr(e, "payload", bytes([e.payload[0] ^ 1]) + e.payload[1:])),
        ("flipped path byte", lambda e: e.batch.path.__setitem__(0, bytes([e.batch.path[0][0] ^ 1]) + e.batch.path[0][1:])),
        ("another leaf's place", lambda e: setattr(e.batch, "index", 1)),
        ("place past the batch", lambda e: setattr(e.batch, "index", 3)),
        ("another size", lambda e: setattr(e.batch, "size", 4)),
        ("a batch of one", lambda e: (setattr(e.batch, "size", 1), e.batch.ClearField("path"))),
        ("path cut short", lambda e: e.batch.path.pop()),
        ("path hash of 31 bytes", lambda e: e.batch.path.__setitem__(0, e.batch.path[0][:31])),
        ("batch dropped", lambda e: e.ClearField("batch")),
        ("another record's payload under this path", other_payload),
    ],
)
def test_tampered_batch_is_refused(name, edit):
    records, pub = batch_vector()
    env, message_type, _ = records[0]
    with pytest.raises(ambit.ReceiptError):
        ambit.verify_receipt(edited(env, edit), pub, message_type)
