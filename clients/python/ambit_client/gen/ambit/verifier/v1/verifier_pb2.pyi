from ambit.receipt.v1 import receipt_pb2 as _receipt_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VerifyRequest(_message.Message):
    __slots__ = ["capability", "effect_receipt"]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    EFFECT_RECEIPT_FIELD_NUMBER: _ClassVar[int]
    capability: _receipt_pb2.Envelope
    effect_receipt: _receipt_pb2.Envelope
    def __init__(self, capability: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., effect_receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ...) -> None: ...

class VerifyResponse(_message.Message):
    __slots__ = ["log_index", "receipt", "signed_receipt"]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    SIGNED_RECEIPT_FIELD_NUMBER: _ClassVar[int]
    log_index: int
    receipt: _receipt_pb2.ReadbackReceipt
    signed_receipt: _receipt_pb2.Envelope
    def __init__(self, receipt: _Optional[_Union[_receipt_pb2.ReadbackReceipt, _Mapping]] = ..., signed_receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., log_index: _Optional[int] = ...) -> None: ...
