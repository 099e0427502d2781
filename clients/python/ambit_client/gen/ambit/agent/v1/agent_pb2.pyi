from ambit.contract.v1 import contract_pb2 as _contract_pb2
from ambit.receipt.v1 import receipt_pb2 as _receipt_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

COMMITMENT_STATUS_AUTHORISED: CommitmentStatus
COMMITMENT_STATUS_EFFECTED: CommitmentStatus
COMMITMENT_STATUS_EXPIRED: CommitmentStatus
COMMITMENT_STATUS_FAILED: CommitmentStatus
COMMITMENT_STATUS_REDEEMED: CommitmentStatus
COMMITMENT_STATUS_REFUSED: CommitmentStatus
COMMITMENT_STATUS_REVOKED: CommitmentStatus
COMMITMENT_STATUS_UNSPECIFIED: CommitmentStatus
COMMITMENT_STATUS_VERIFIED: CommitmentStatus
DESCRIPTOR: _descriptor.FileDescriptor

class Commitment(_message.Message):
    __slots__ = ["amount", "capability_id", "decision_id", "effect_receipt_id", "note", "readback_receipt_id", "status", "tool"]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    EFFECT_RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    READBACK_RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    amount: _contract_pb2.Money
    capability_id: str
    decision_id: str
    effect_receipt_id: str
    note: str
    readback_receipt_id: str
    status: CommitmentStatus
    tool: str
    def __init__(self, capability_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., tool: _Optional[str] = ..., amount: _Optional[_Union[_contract_pb2.Money, _Mapping]] = ..., status: _Optional[_Union[CommitmentStatus, str]] = ..., effect_receipt_id: _Optional[str] = ..., readback_receipt_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class GetSelfViewRequest(_message.Message):
    __slots__ = ["facts", "task_id"]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    facts: _containers.RepeatedScalarFieldContainer[str]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., facts: _Optional[_Iterable[str]] = ...) -> None: ...

class GetSelfViewResponse(_message.Message):
    __slots__ = ["capabilities", "commitments", "commitments_omitted", "expires_at", "purpose", "record", "sources", "tools", "uncertainty"]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    COMMITMENTS_FIELD_NUMBER: _ClassVar[int]
    COMMITMENTS_OMITTED_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    UNCERTAINTY_FIELD_NUMBER: _ClassVar[int]
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    commitments: _containers.RepeatedCompositeFieldContainer[Commitment]
    commitments_omitted: int
    expires_at: _timestamp_pb2.Timestamp
    purpose: str
    record: _contract_pb2.RecordRef
    sources: _containers.RepeatedCompositeFieldContainer[SourceSpec]
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    uncertainty: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, capabilities: _Optional[_Iterable[str]] = ..., uncertainty: _Optional[_Iterable[str]] = ..., commitments: _Optional[_Iterable[_Union[Commitment, _Mapping]]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ..., sources: _Optional[_Iterable[_Union[SourceSpec, _Mapping]]] = ..., record: _Optional[_Union[_contract_pb2.RecordRef, _Mapping]] = ..., purpose: _Optional[str] = ..., commitments_omitted: _Optional[int] = ...) -> None: ...

class RequestBoundaryChangeRequest(_message.Message):
    __slots__ = ["description", "task_id"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    description: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class RequestBoundaryChangeResponse(_message.Message):
    __slots__ = ["item_id"]
    CLASS_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    def __init__(self, item_id: _Optional[str] = ..., **kwargs) -> None: ...

class SourceSpec(_message.Message):
    __slots__ = ["fields", "name", "provenance", "quarantined"]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    name: str
    provenance: _contract_pb2.Provenance
    quarantined: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., quarantined: _Optional[_Iterable[str]] = ..., provenance: _Optional[_Union[_contract_pb2.Provenance, str]] = ...) -> None: ...

class SubmitProposalRequest(_message.Message):
    __slots__ = ["approval_id", "call", "evidence", "purpose", "request_id", "task_id"]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    call: _contract_pb2.ToolCall
    evidence: _containers.RepeatedCompositeFieldContainer[_receipt_pb2.Envelope]
    purpose: str
    request_id: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., purpose: _Optional[str] = ..., evidence: _Optional[_Iterable[_Union[_receipt_pb2.Envelope, _Mapping]]] = ..., approval_id: _Optional[str] = ..., call: _Optional[_Union[_contract_pb2.ToolCall, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class SubmitProposalResponse(_message.Message):
    __slots__ = ["approval_id", "capability", "capability_expires_at", "decision", "decision_id", "decision_receipt", "idempotency_key", "log_index", "repeated"]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_RECEIPT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    REPEATED_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    capability: _receipt_pb2.Envelope
    capability_expires_at: _timestamp_pb2.Timestamp
    decision: _contract_pb2.Decision
    decision_id: str
    decision_receipt: _receipt_pb2.Envelope
    idempotency_key: str
    log_index: int
    repeated: bool
    def __init__(self, decision_id: _Optional[str] = ..., decision: _Optional[_Union[_contract_pb2.Decision, _Mapping]] = ..., decision_receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., capability: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., approval_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., capability_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., repeated: bool = ..., log_index: _Optional[int] = ...) -> None: ...

class ToolSpec(_message.Message):
    __slots__ = ["description", "input_schema", "name"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    description: str
    input_schema: _struct_pb2.Struct
    name: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class CommitmentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
