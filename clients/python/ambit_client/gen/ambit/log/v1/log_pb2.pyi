from ambit.ledger.v1 import ledger_pb2 as _ledger_pb2
from ambit.receipt.v1 import receipt_pb2 as _receipt_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Checkpoint(_message.Message):
    __slots__ = ["note", "origin", "root_hash", "size"]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    ROOT_HASH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    note: bytes
    origin: str
    root_hash: bytes
    size: int
    def __init__(self, note: _Optional[bytes] = ..., origin: _Optional[str] = ..., size: _Optional[int] = ..., root_hash: _Optional[bytes] = ...) -> None: ...

class ConsistencyProof(_message.Message):
    __slots__ = ["from_size", "hashes", "to_size"]
    FROM_SIZE_FIELD_NUMBER: _ClassVar[int]
    HASHES_FIELD_NUMBER: _ClassVar[int]
    TO_SIZE_FIELD_NUMBER: _ClassVar[int]
    from_size: int
    hashes: _containers.RepeatedScalarFieldContainer[bytes]
    to_size: int
    def __init__(self, from_size: _Optional[int] = ..., to_size: _Optional[int] = ..., hashes: _Optional[_Iterable[bytes]] = ...) -> None: ...

class InclusionProof(_message.Message):
    __slots__ = ["hashes", "leaf_index", "tree_size"]
    HASHES_FIELD_NUMBER: _ClassVar[int]
    LEAF_INDEX_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    hashes: _containers.RepeatedScalarFieldContainer[bytes]
    leaf_index: int
    tree_size: int
    def __init__(self, leaf_index: _Optional[int] = ..., tree_size: _Optional[int] = ..., hashes: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ReceiptBundle(_message.Message):
    __slots__ = ["checkpoint", "entry", "envelope", "inclusion", "leaf_index"]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    INCLUSION_FIELD_NUMBER: _ClassVar[int]
    LEAF_INDEX_FIELD_NUMBER: _ClassVar[int]
    checkpoint: bytes
    entry: _ledger_pb2.Entry
    envelope: _receipt_pb2.Envelope
    inclusion: InclusionProof
    leaf_index: int
    def __init__(self, envelope: _Optional[_Union[_receipt_pb2.Envelope, _Mapping]] = ..., entry: _Optional[_Union[_ledger_pb2.Entry, _Mapping]] = ..., leaf_index: _Optional[int] = ..., inclusion: _Optional[_Union[InclusionProof, _Mapping]] = ..., checkpoint: _Optional[bytes] = ...) -> None: ...
