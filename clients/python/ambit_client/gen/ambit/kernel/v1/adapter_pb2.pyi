from ambit.agent.v1 import agent_pb2 as _agent_pb2
from ambit.contract.v1 import contract_pb2 as _contract_pb2
from ambit.receipt.v1 import receipt_pb2 as _receipt_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AuthorizeReadRequest(_message.Message):
    __slots__ = ["agent", "fields", "purpose", "record_key", "source", "task_id"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    RECORD_KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    agent: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    purpose: str
    record_key: str
    source: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., source: _Optional[str] = ..., record_key: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., agent: _Optional[str] = ..., purpose: _Optional[str] = ...) -> None: ...

class AuthorizeReadResponse(_message.Message):
    __slots__ = ["bound_state_version", "confine_field", "confine_value", "derived", "provenance", "quarantined"]
    BOUND_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONFINE_FIELD_FIELD_NUMBER: _ClassVar[int]
    CONFINE_VALUE_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    bound_state_version: str
    confine_field: str
    confine_value: str
    derived: _containers.RepeatedCompositeFieldContainer[_contract_pb2.DerivedField]
    provenance: _contract_pb2.Provenance
    quarantined: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, provenance: _Optional[_Union[_contract_pb2.Provenance, str]] = ..., derived: _Optional[_Iterable[_Union[_contract_pb2.DerivedField, _Mapping]]] = ..., quarantined: _Optional[_Iterable[str]] = ..., confine_field: _Optional[str] = ..., confine_value: _Optional[str] = ..., bound_state_version: _Optional[str] = ...) -> None: ...

class RecordEffectRequest(_message.Message):
    __slots__ = ["receipt"]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    receipt: _receipt_pb2.Envelope
    def __init__(self, receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ...) -> None: ...

class RecordEffectResponse(_message.Message):
    __slots__ = ["commitment", "log_index"]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    commitment: _agent_pb2.Commitment
    log_index: int
    def __init__(self, commitment: _Optional[_Union[_agent_pb2.Commitment, _Mapping]] = ..., log_index: _Optional[int] = ...) -> None: ...

class RecordEvidenceRequest(_message.Message):
    __slots__ = ["receipt"]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    receipt: _receipt_pb2.Envelope
    def __init__(self, receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ...) -> None: ...

class RecordEvidenceResponse(_message.Message):
    __slots__ = ["log_index", "revoked_capability_ids", "state_changed"]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    REVOKED_CAPABILITY_IDS_FIELD_NUMBER: _ClassVar[int]
    STATE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    log_index: int
    revoked_capability_ids: _containers.RepeatedScalarFieldContainer[str]
    state_changed: bool
    def __init__(self, state_changed: bool = ..., revoked_capability_ids: _Optional[_Iterable[str]] = ..., log_index: _Optional[int] = ...) -> None: ...

class RecordReadbackRequest(_message.Message):
    __slots__ = ["receipt"]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    receipt: _receipt_pb2.Envelope
    def __init__(self, receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ...) -> None: ...

class RecordReadbackResponse(_message.Message):
    __slots__ = ["commitment", "log_index"]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    commitment: _agent_pb2.Commitment
    log_index: int
    def __init__(self, commitment: _Optional[_Union[_agent_pb2.Commitment, _Mapping]] = ..., log_index: _Optional[int] = ...) -> None: ...

class RecordRefusalRequest(_message.Message):
    __slots__ = ["receipt"]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    receipt: _receipt_pb2.Envelope
    def __init__(self, receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ...) -> None: ...

class RecordRefusalResponse(_message.Message):
    __slots__ = ["commitment", "log_index"]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    commitment: _agent_pb2.Commitment
    log_index: int
    def __init__(self, commitment: _Optional[_Union[_agent_pb2.Commitment, _Mapping]] = ..., log_index: _Optional[int] = ...) -> None: ...

class RedeemCapabilityRequest(_message.Message):
    __slots__ = ["capability", "holder", "idempotency_key"]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    capability: _receipt_pb2.Envelope
    holder: str
    idempotency_key: str
    def __init__(self, capability: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., idempotency_key: _Optional[str] = ..., holder: _Optional[str] = ...) -> None: ...

class RedeemCapabilityResponse(_message.Message):
    __slots__ = ["commitment", "first"]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    FIRST_FIELD_NUMBER: _ClassVar[int]
    commitment: _agent_pb2.Commitment
    first: bool
    def __init__(self, first: bool = ..., commitment: _Optional[_Union[_agent_pb2.Commitment, _Mapping]] = ...) -> None: ...

class ReportStateChangeRequest(_message.Message):
    __slots__ = ["observed_at", "record_key", "source", "state_version"]
    OBSERVED_AT_FIELD_NUMBER: _ClassVar[int]
    RECORD_KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    observed_at: _timestamp_pb2.Timestamp
    record_key: str
    source: str
    state_version: str
    def __init__(self, source: _Optional[str] = ..., record_key: _Optional[str] = ..., state_version: _Optional[str] = ..., observed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReportStateChangeResponse(_message.Message):
    __slots__ = ["revoked_capability_ids", "state_changed"]
    REVOKED_CAPABILITY_IDS_FIELD_NUMBER: _ClassVar[int]
    STATE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    revoked_capability_ids: _containers.RepeatedScalarFieldContainer[str]
    state_changed: bool
    def __init__(self, state_changed: bool = ..., revoked_capability_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class WatchedRecord(_message.Message):
    __slots__ = ["record_key", "source", "state_version"]
    RECORD_KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    record_key: str
    source: str
    state_version: str
    def __init__(self, source: _Optional[str] = ..., record_key: _Optional[str] = ..., state_version: _Optional[str] = ...) -> None: ...

class WatchedRecordsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class WatchedRecordsResponse(_message.Message):
    __slots__ = ["records"]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[WatchedRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[WatchedRecord, _Mapping]]] = ...) -> None: ...
