from ambit.agent.v1 import agent_pb2 as _agent_pb2
from ambit.contract.v1 import contract_pb2 as _contract_pb2
from ambit.ledger.v1 import ledger_pb2 as _ledger_pb2
from ambit.log.v1 import log_pb2 as _log_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

APPROVAL_STATE_APPROVED: ApprovalState
APPROVAL_STATE_CANCELLED: ApprovalState
APPROVAL_STATE_CONSUMED: ApprovalState
APPROVAL_STATE_PENDING: ApprovalState
APPROVAL_STATE_REJECTED: ApprovalState
APPROVAL_STATE_UNSPECIFIED: ApprovalState
DESCRIPTOR: _descriptor.FileDescriptor

class Approval(_message.Message):
    __slots__ = ["approval_id", "call", "decided_by", "decision_id", "note", "reasons", "requested_at", "state", "task_id"]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    call: _contract_pb2.ToolCall
    decided_by: str
    decision_id: str
    note: str
    reasons: _containers.RepeatedCompositeFieldContainer[_contract_pb2.Reason]
    requested_at: _timestamp_pb2.Timestamp
    state: ApprovalState
    task_id: str
    def __init__(self, approval_id: _Optional[str] = ..., task_id: _Optional[str] = ..., decision_id: _Optional[str] = ..., call: _Optional[_Union[_contract_pb2.ToolCall, _Mapping]] = ..., reasons: _Optional[_Iterable[_Union[_contract_pb2.Reason, _Mapping]]] = ..., state: _Optional[_Union[ApprovalState, str]] = ..., decided_by: _Optional[str] = ..., note: _Optional[str] = ..., requested_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BindTaskRequest(_message.Message):
    __slots__ = ["agent", "contract_item_id", "task_id"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    agent: str
    contract_item_id: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., contract_item_id: _Optional[str] = ..., agent: _Optional[str] = ...) -> None: ...

class BindTaskResponse(_message.Message):
    __slots__ = ["item"]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _ledger_pb2.ClassifiedItem
    def __init__(self, item: _Optional[_Union[_ledger_pb2.ClassifiedItem, _Mapping]] = ...) -> None: ...

class DecideApprovalRequest(_message.Message):
    __slots__ = ["approval_id", "approve", "note"]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVE_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    approve: bool
    note: str
    def __init__(self, approval_id: _Optional[str] = ..., approve: bool = ..., note: _Optional[str] = ...) -> None: ...

class DecideApprovalResponse(_message.Message):
    __slots__ = ["approval"]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    approval: Approval
    def __init__(self, approval: _Optional[_Union[Approval, _Mapping]] = ...) -> None: ...

class DeriveHandoffRequest(_message.Message):
    __slots__ = ["child_agent", "child_item_id", "child_task_id", "filter", "parent_item_id"]
    CHILD_AGENT_FIELD_NUMBER: _ClassVar[int]
    CHILD_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PARENT_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    child_agent: str
    child_item_id: str
    child_task_id: str
    filter: _ledger_pb2.HandoffFilter
    parent_item_id: str
    def __init__(self, parent_item_id: _Optional[str] = ..., child_task_id: _Optional[str] = ..., child_item_id: _Optional[str] = ..., filter: _Optional[_Union[_ledger_pb2.HandoffFilter, _Mapping]] = ..., child_agent: _Optional[str] = ...) -> None: ...

class DeriveHandoffResponse(_message.Message):
    __slots__ = ["item"]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _ledger_pb2.ClassifiedItem
    def __init__(self, item: _Optional[_Union[_ledger_pb2.ClassifiedItem, _Mapping]] = ...) -> None: ...

class ExportReceiptRequest(_message.Message):
    __slots__ = ["receipt_id", "tree_size"]
    RECEIPT_ID_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    receipt_id: str
    tree_size: int
    def __init__(self, receipt_id: _Optional[str] = ..., tree_size: _Optional[int] = ...) -> None: ...

class ExportReceiptResponse(_message.Message):
    __slots__ = ["bundle"]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    bundle: _log_pb2.ReceiptBundle
    def __init__(self, bundle: _Optional[_Union[_log_pb2.ReceiptBundle, _Mapping]] = ...) -> None: ...

class GetCheckpointRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetCheckpointResponse(_message.Message):
    __slots__ = ["checkpoint"]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    checkpoint: _log_pb2.Checkpoint
    def __init__(self, checkpoint: _Optional[_Union[_log_pb2.Checkpoint, _Mapping]] = ...) -> None: ...

class GetConsistencyProofRequest(_message.Message):
    __slots__ = ["from_size", "to_size"]
    FROM_SIZE_FIELD_NUMBER: _ClassVar[int]
    TO_SIZE_FIELD_NUMBER: _ClassVar[int]
    from_size: int
    to_size: int
    def __init__(self, from_size: _Optional[int] = ..., to_size: _Optional[int] = ...) -> None: ...

class GetConsistencyProofResponse(_message.Message):
    __slots__ = ["checkpoint", "proof"]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    PROOF_FIELD_NUMBER: _ClassVar[int]
    checkpoint: _log_pb2.Checkpoint
    proof: _log_pb2.ConsistencyProof
    def __init__(self, proof: _Optional[_Union[_log_pb2.ConsistencyProof, _Mapping]] = ..., checkpoint: _Optional[_Union[_log_pb2.Checkpoint, _Mapping]] = ...) -> None: ...

class GetInclusionProofRequest(_message.Message):
    __slots__ = ["leaf_index", "tree_size"]
    LEAF_INDEX_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    leaf_index: int
    tree_size: int
    def __init__(self, leaf_index: _Optional[int] = ..., tree_size: _Optional[int] = ...) -> None: ...

class GetInclusionProofResponse(_message.Message):
    __slots__ = ["checkpoint", "proof"]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    PROOF_FIELD_NUMBER: _ClassVar[int]
    checkpoint: _log_pb2.Checkpoint
    proof: _log_pb2.InclusionProof
    def __init__(self, proof: _Optional[_Union[_log_pb2.InclusionProof, _Mapping]] = ..., checkpoint: _Optional[_Union[_log_pb2.Checkpoint, _Mapping]] = ...) -> None: ...

class ListApprovalsRequest(_message.Message):
    __slots__ = ["after_approval_id", "limit", "state"]
    AFTER_APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    after_approval_id: str
    limit: int
    state: ApprovalState
    def __init__(self, state: _Optional[_Union[ApprovalState, str]] = ..., after_approval_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListApprovalsResponse(_message.Message):
    __slots__ = ["approvals", "next_after_approval_id"]
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    NEXT_AFTER_APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    approvals: _containers.RepeatedCompositeFieldContainer[Approval]
    next_after_approval_id: str
    def __init__(self, approvals: _Optional[_Iterable[_Union[Approval, _Mapping]]] = ..., next_after_approval_id: _Optional[str] = ...) -> None: ...

class ListCommitmentsRequest(_message.Message):
    __slots__ = ["after_capability_id", "limit", "task_id"]
    AFTER_CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    after_capability_id: str
    limit: int
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., after_capability_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListCommitmentsResponse(_message.Message):
    __slots__ = ["commitments", "next_after_capability_id"]
    COMMITMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_AFTER_CAPABILITY_ID_FIELD_NUMBER: _ClassVar[int]
    commitments: _containers.RepeatedCompositeFieldContainer[_agent_pb2.Commitment]
    next_after_capability_id: str
    def __init__(self, commitments: _Optional[_Iterable[_Union[_agent_pb2.Commitment, _Mapping]]] = ..., next_after_capability_id: _Optional[str] = ...) -> None: ...

class ListEntriesRequest(_message.Message):
    __slots__ = ["after_seq", "limit"]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after_seq: int
    limit: int
    def __init__(self, after_seq: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ListEntriesResponse(_message.Message):
    __slots__ = ["entries", "next_after_seq"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[_ledger_pb2.Entry]
    next_after_seq: int
    def __init__(self, entries: _Optional[_Iterable[_Union[_ledger_pb2.Entry, _Mapping]]] = ..., next_after_seq: _Optional[int] = ...) -> None: ...

class ListItemsRequest(_message.Message):
    __slots__ = ["after_item_id", "at", "limit"]
    AFTER_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after_item_id: str
    at: _timestamp_pb2.Timestamp
    limit: int
    def __init__(self, at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., after_item_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListItemsResponse(_message.Message):
    __slots__ = ["items", "ledger_head", "next_after_item_id"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    LEDGER_HEAD_FIELD_NUMBER: _ClassVar[int]
    NEXT_AFTER_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[_ledger_pb2.ClassifiedItem]
    ledger_head: str
    next_after_item_id: str
    def __init__(self, items: _Optional[_Iterable[_Union[_ledger_pb2.ClassifiedItem, _Mapping]]] = ..., ledger_head: _Optional[str] = ..., next_after_item_id: _Optional[str] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ["after_task_id", "agent", "contract_item_id", "limit"]
    AFTER_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after_task_id: str
    agent: str
    contract_item_id: str
    limit: int
    def __init__(self, agent: _Optional[str] = ..., contract_item_id: _Optional[str] = ..., after_task_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ["next_after_task_id", "tasks"]
    NEXT_AFTER_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    next_after_task_id: str
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., next_after_task_id: _Optional[str] = ...) -> None: ...

class PromoteItemRequest(_message.Message):
    __slots__ = ["canon_item_id"]
    CANON_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    canon_item_id: str
    def __init__(self, canon_item_id: _Optional[str] = ...) -> None: ...

class PromoteItemResponse(_message.Message):
    __slots__ = ["item"]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _ledger_pb2.ClassifiedItem
    def __init__(self, item: _Optional[_Union[_ledger_pb2.ClassifiedItem, _Mapping]] = ...) -> None: ...

class ProposeItemRequest(_message.Message):
    __slots__ = ["item"]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _ledger_pb2.CanonItem
    def __init__(self, item: _Optional[_Union[_ledger_pb2.CanonItem, _Mapping]] = ...) -> None: ...

class ProposeItemResponse(_message.Message):
    __slots__ = ["item"]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _ledger_pb2.ClassifiedItem
    def __init__(self, item: _Optional[_Union[_ledger_pb2.ClassifiedItem, _Mapping]] = ...) -> None: ...

class ResolveConflictRequest(_message.Message):
    __slots__ = ["canon_item_id", "note"]
    CANON_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    canon_item_id: str
    note: str
    def __init__(self, canon_item_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ResolveConflictResponse(_message.Message):
    __slots__ = ["item"]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _ledger_pb2.ClassifiedItem
    def __init__(self, item: _Optional[_Union[_ledger_pb2.ClassifiedItem, _Mapping]] = ...) -> None: ...

class SupersedeItemRequest(_message.Message):
    __slots__ = ["new_item_id", "old_item_id"]
    NEW_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OLD_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    new_item_id: str
    old_item_id: str
    def __init__(self, old_item_id: _Optional[str] = ..., new_item_id: _Optional[str] = ...) -> None: ...

class SupersedeItemResponse(_message.Message):
    __slots__ = ["new_item", "old_item"]
    NEW_ITEM_FIELD_NUMBER: _ClassVar[int]
    OLD_ITEM_FIELD_NUMBER: _ClassVar[int]
    new_item: _ledger_pb2.ClassifiedItem
    old_item: _ledger_pb2.ClassifiedItem
    def __init__(self, old_item: _Optional[_Union[_ledger_pb2.ClassifiedItem, _Mapping]] = ..., new_item: _Optional[_Union[_ledger_pb2.ClassifiedItem, _Mapping]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ["agent", "contract_class", "contract_id", "contract_item_id", "contract_version", "task_id", "valid_until"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_CLASS_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_ID_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_VERSION_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    VALID_UNTIL_FIELD_NUMBER: _ClassVar[int]
    agent: str
    contract_class: _ledger_pb2.CanonClass
    contract_id: str
    contract_item_id: str
    contract_version: str
    task_id: str
    valid_until: _timestamp_pb2.Timestamp
    def __init__(self, task_id: _Optional[str] = ..., contract_item_id: _Optional[str] = ..., agent: _Optional[str] = ..., contract_class: _Optional[_Union[_ledger_pb2.CanonClass, str]] = ..., contract_id: _Optional[str] = ..., contract_version: _Optional[str] = ..., valid_until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class VerifyLogRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class VerifyLogResponse(_message.Message):
    __slots__ = ["entries", "first_bad_seq", "head", "last_bad_seq", "ok", "problem"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    FIRST_BAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    LAST_BAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    entries: int
    first_bad_seq: int
    head: str
    last_bad_seq: int
    ok: bool
    problem: str
    def __init__(self, ok: bool = ..., entries: _Optional[int] = ..., first_bad_seq: _Optional[int] = ..., problem: _Optional[str] = ..., head: _Optional[str] = ..., last_bad_seq: _Optional[int] = ...) -> None: ...

class ApprovalState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
