from ambit.receipt.v1 import receipt_pb2 as _receipt_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecuteRequest(_message.Message):
    __slots__ = ["capability", "idempotency_key"]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    capability: _receipt_pb2.Envelope
    idempotency_key: str
    def __init__(self, capability: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ["log_index", "receipt", "repeated", "signed_receipt"]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    REPEATED_FIELD_NUMBER: _ClassVar[int]
    SIGNED_RECEIPT_FIELD_NUMBER: _ClassVar[int]
    log_index: int
    receipt: _receipt_pb2.EffectReceipt
    repeated: bool
    signed_receipt: _receipt_pb2.Envelope
    def __init__(self, receipt: _Optional[_Union[_receipt_pb2.EffectReceipt, _Mapping]] = ..., signed_receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., repeated: bool = ..., log_index: _Optional[int] = ...) -> None: ...
