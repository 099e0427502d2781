from ambit.receipt.v1 import receipt_pb2 as _receipt_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadRequest(_message.Message):
    __slots__ = ["fields", "purpose", "record_key", "source", "task_id"]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    RECORD_KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    purpose: str
    record_key: str
    source: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., source: _Optional[str] = ..., record_key: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., purpose: _Optional[str] = ...) -> None: ...

class ReadResponse(_message.Message):
    __slots__ = ["log_index", "receipt", "signed_receipt", "values"]
    LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    SIGNED_RECEIPT_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    log_index: int
    receipt: _receipt_pb2.EvidenceReceipt
    signed_receipt: _receipt_pb2.Envelope
    values: _struct_pb2.Struct
    def __init__(self, values: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., receipt: _Optional[_Union[_receipt_pb2.EvidenceReceipt, _Mapping]] = ..., signed_receipt: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., log_index: _Optional[int] = ...) -> None: ...
