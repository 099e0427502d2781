"""Offline verification of Ambit's signed receipts and capabilities.

An Envelope (ambit.receipt.v1) carries the serialised payload, its full
type name, the signer's key id and an Ed25519 signature over

    "ambit-envelope-v1" || u64be(len(payload_type)) || payload_type ||
    u64be(len(payload)) || payload

so a verifier checks the exact bytes it was given and only then decodes
them: no canonical serialisation is needed. Records signed together carry
a batch instead (index, size and the RFC 6962 inclusion path of the
record's encoding); the signature then covers

    "ambit-envelope-batch-v1" || u64be(size) || root

where root is the Merkle tree hash the path leads to.
"""

import hashlib
import os

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from google.protobuf.message import DecodeError

_DOMAIN = b"ambit-envelope-v1"
_BATCH_DOMAIN = b"ambit-envelope-batch-v1"


class ReceiptError(Exception):
    """An envelope that does not verify: wrong type, bad signature or an
    undecodable payload."""


def signing_input(payload_type, payload):
    """The bytes an envelope's signature covers."""
    typ = payload_type.encode("utf-8")
    return _DOMAIN + len(typ).to_bytes(8, "big") + typ + len(payload).to_bytes(8, "big") + payload


def batch_root(batch, encoding):
    """The root of the batch a record with this encoding belongs to, by
    its inclusion path (RFC 9162, section 2.1.3.2)."""
    if batch.size < 2:
        raise ReceiptError(f"receipt: a batch of {batch.size} records; one record is signed alone")
    if batch.index >= batch.size:
        raise ReceiptError(f"receipt: leaf {batch.index} of a batch of {batch.size}")
    fn, sn = batch.index, batch.size - 1
    r = hashlib.sha256(b"\x00" + encoding).digest()
    for p in batch.path:
        if len(p) != 32:
            raise ReceiptError("receipt: a batch path hash is not 32 bytes")
        if sn == 0:
            raise ReceiptError("receipt: batch path too long")
        if fn & 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ReceiptError("receipt: batch path too short")
    return r


def signed_bytes(envelope):
    """The bytes an envelope's signature covers: its record's encoding, or
    its batch's size and root."""
    encoding = signing_input(envelope.payload_type, envelope.payload)
    if not envelope.HasField("batch"):
        return encoding
    root = batch_root(envelope.batch, encoding)
    return _BATCH_DOMAIN + envelope.batch.size.to_bytes(8, "big") + root


def load_public_key(identity_dir, name):
    """The receipt-verification key of identity ``name`` (``<name>.sign.pub``,
    PEM, in a key folder as ``ambitctl dev init`` writes it: every folder
    holds the public keys of the kernel, the adapters and the verifier)."""
    path = os.path.join(identity_dir, f"{name}.sign.pub")
    with open(path, "rb") as f:
        key = load_pem_public_key(f.read())
    if not isinstance(key, Ed25519PublicKey):
        raise ReceiptError(f"{path} holds a {type(key).__name__}, want an Ed25519 key")
    return key


def verify_receipt(envelope, public_key, message_type):
    """Checks an envelope's signature with its issuer's public key (an
    Ed25519PublicKey or its 32 raw bytes) and decodes the payload as
    ``message_type``, whose full name the envelope must carry. Returns the
    decoded message; raises ReceiptError when anything does not verify."""
    if envelope is None:
        raise ReceiptError("receipt: missing")
    want = message_type.DESCRIPTOR.full_name
    if envelope.payload_type != want:
        raise ReceiptError(f"receipt: payload type {envelope.payload_type!r}, want {want!r}")
    if isinstance(public_key, (bytes, bytearray)):
        public_key = Ed25519PublicKey.from_public_bytes(bytes(public_key))
    try:
        public_key.verify(envelope.signature, signed_bytes(envelope))
    except InvalidSignature:
        raise ReceiptError(f"receipt: bad signature from {envelope.key_id!r}") from None
    message = message_type()
    try:
        message.ParseFromString(envelope.payload)
    except DecodeError as e:
        raise ReceiptError(f"receipt: decode {want}: {e}") from e
    return message
