from ambit.contract.v1 import contract_pb2 as _contract_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
READBACK_STATUS_MISMATCH: ReadbackStatus
READBACK_STATUS_UNSPECIFIED: ReadbackStatus
READBACK_STATUS_VERIFIED: ReadbackStatus

class Batch(_message.Message):
    __slots__ = ["index", "path", "size"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    index: int
    path: _containers.RepeatedScalarFieldContainer[bytes]
    size: int
    def __init__(self, index: _Optional[int] = ..., size: _Optional[int] = ..., path: _Optional[_Iterable[bytes]] = ...) -> None: ...

class Capability(_message.Message):
    __slots__ = ["call", "capability_id", "contract_hash", "decision_id", "destination", "expires_at", "holder", "idempotency_key", "issued_at", "record", "state_version", "task_id"]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_HASH_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ISSUED_AT_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    call: _contract_pb2.ToolCall
    capability_id: str
    contract_hash: str
    decision_id: str
    destination: str
    expires_at: _timestamp_pb2.Timestamp
    holder: str
    idempotency_key: str
    issued_at: _timestamp_pb2.Timestamp
    record: str
    state_version: str
    task_id: str
    def __init__(self, capability_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., task_id: _Optional[str] = ..., contract_hash: _Optional[str] = ..., call: _Optional[_Union[_contract_pb2.ToolCall, _Mapping]] = ..., destination: _Optional[str] = ..., state_version: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., issued_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., holder: _Optional[str] = ..., record: _Optional[str] = ...) -> None: ...

class DecisionReceipt(_message.Message):
    __slots__ = ["agent", "approval_id", "call", "capability_id", "contract_hash", "contract_item_id", "decided_at", "decision", "decision_id", "evidence", "facts", "ledger_head", "task_id"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_HASH_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    LEDGER_HEAD_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    agent: str
    approval_id: str
    call: _contract_pb2.ToolCall
    capability_id: str
    contract_hash: str
    contract_item_id: str
    decided_at: _timestamp_pb2.Timestamp
    decision: _contract_pb2.Decision
    decision_id: str
    evidence: _containers.RepeatedCompositeFieldContainer[ReceiptRef]
    facts: _contract_pb2.Facts
    ledger_head: str
    task_id: str
    def __init__(self, decision_id: _Optional[str] = ..., task_id: _Optional[str] = ..., agent: _Optional[str] = ..., contract_item_id: _Optional[str] = ..., contract_hash: _Optional[str] = ..., ledger_head: _Optional[str] = ..., call: _Optional[_Union[_contract_pb2.ToolCall, _Mapping]] = ..., facts: _Optional[_Union[_contract_pb2.Facts, _Mapping]] = ..., evidence: _Optional[_Iterable[_Union[ReceiptRef, _Mapping]]] = ..., decision: _Optional[_Union[_contract_pb2.Decision, _Mapping]] = ..., decided_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., capability_id: _Optional[str] = ..., approval_id: _Optional[str] = ...) -> None: ...

class EffectReceipt(_message.Message):
    __slots__ = ["call", "capability_id", "destination", "executed_at", "idempotency_key", "issuer", "receipt_id", "record_ref", "task_id"]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    EXECUTED_AT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    RECORD_REF_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    call: _contract_pb2.ToolCall
    capability_id: str
    destination: str
    executed_at: _timestamp_pb2.Timestamp
    idempotency_key: str
    issuer: str
    receipt_id: str
    record_ref: str
    task_id: str
    def __init__(self, receipt_id: _Optional[str] = ..., capability_id: _Optional[str] = ..., task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., call: _Optional[_Union[_contract_pb2.ToolCall, _Mapping]] = ..., destination: _Optional[str] = ..., record_ref: _Optional[str] = ..., executed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., issuer: _Optional[str] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ["batch", "key_id", "payload", "payload_type", "signature"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    key_id: str
    payload: bytes
    payload_type: str
    signature: bytes
    def __init__(self, payload_type: _Optional[str] = ..., payload: _Optional[bytes] = ..., key_id: _Optional[str] = ..., signature: _Optional[bytes] = ..., batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...

class EvidenceReceipt(_message.Message):
    __slots__ = ["content_hash", "fields", "issuer", "provenance", "quarantined", "read_at", "receipt_id", "record_key", "source", "state_version", "subject", "task_id", "values"]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    READ_AT_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    RECORD_KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    content_hash: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    issuer: str
    provenance: _contract_pb2.Provenance
    quarantined: _containers.RepeatedScalarFieldContainer[str]
    read_at: _timestamp_pb2.Timestamp
    receipt_id: str
    record_key: str
    source: str
    state_version: str
    subject: str
    task_id: str
    values: _struct_pb2.Struct
    def __init__(self, receipt_id: _Optional[str] = ..., task_id: _Optional[str] = ..., source: _Optional[str] = ..., record_key: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., state_version: _Optional[str] = ..., subject: _Optional[str] = ..., read_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., content_hash: _Optional[str] = ..., provenance: _Optional[_Union[_contract_pb2.Provenance, str]] = ..., issuer: _Optional[str] = ..., values: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., quarantined: _Optional[_Iterable[str]] = ...) -> None: ...

class ReadbackReceipt(_message.Message):
    __slots__ = ["capability_id", "effect_receipt_id", "findings", "idempotency_key", "issuer", "read_at", "receipt_id", "records_found", "status", "task_id"]
    CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    EFFECT_RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    READ_AT_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FOUND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    capability_id: str
    effect_receipt_id: str
    findings: _containers.RepeatedScalarFieldContainer[str]
    idempotency_key: str
    issuer: str
    read_at: _timestamp_pb2.Timestamp
    receipt_id: str
    records_found: int
    status: ReadbackStatus
    task_id: str
    def __init__(self, receipt_id: _Optional[str] = ..., capability_id: _Optional[str] = ..., effect_receipt_id: _Optional[str] = ..., task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., status: _Optional[_Union[ReadbackStatus, str]] = ..., findings: _Optional[_Iterable[str]] = ..., records_found: _Optional[int] = ..., read_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., issuer: _Optional[str] = ...) -> None: ...

class ReceiptRef(_message.Message):
    __slots__ = ["payload_hash", "receipt_id"]
    PAYLOAD_HASH_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    payload_hash: str
    receipt_id: str
    def __init__(self, receipt_id: _Optional[str] = ..., payload_hash: _Optional[str] = ...) -> None: ...

class RefusalReceipt(_message.Message):
    __slots__ = ["call", "capability_id", "idempotency_key", "issuer", "reason", "receipt_id", "refused_at", "task_id"]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    REFUSED_AT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    call: _contract_pb2.ToolCall
    capability_id: str
    idempotency_key: str
    issuer: str
    reason: str
    receipt_id: str
    refused_at: _timestamp_pb2.Timestamp
    task_id: str
    def __init__(self, receipt_id: _Optional[str] = ..., capability_id: _Optional[str] = ..., task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., call: _Optional[_Union[_contract_pb2.ToolCall, _Mapping]] = ..., reason: _Optional[str] = ..., refused_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., issuer: _Optional[str] = ...) -> None: ...

class ReadbackStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
