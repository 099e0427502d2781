from ambit.contract.v1 import contract_pb2 as _contract_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

ASSURANCE_DECISION_ACCEPTED: AssuranceDecision
ASSURANCE_DECISION_REFUSED: AssuranceDecision
ASSURANCE_DECISION_UNSPECIFIED: AssuranceDecision
AUTHORITY_LEVEL_DELEGATED: AuthorityLevel
AUTHORITY_LEVEL_NONE: AuthorityLevel
AUTHORITY_LEVEL_OWNER: AuthorityLevel
AUTHORITY_LEVEL_UNSPECIFIED: AuthorityLevel
CANON_CLASS_CANONICAL: CanonClass
CANON_CLASS_DEPRECATED: CanonClass
CANON_CLASS_EXTERNAL_UNTRUSTED: CanonClass
CANON_CLASS_HOLD: CanonClass
CANON_CLASS_INCONCLUSIVE: CanonClass
CANON_CLASS_PROVISIONAL: CanonClass
CANON_CLASS_SESSION_LOCAL: CanonClass
CANON_CLASS_UNKNOWN: CanonClass
CANON_CLASS_UNSPECIFIED: CanonClass
CONFLICT_STATE_NONE: ConflictState
CONFLICT_STATE_RESOLVED: ConflictState
CONFLICT_STATE_UNRESOLVED: ConflictState
CONFLICT_STATE_UNSPECIFIED: ConflictState
DESCRIPTOR: _descriptor.FileDescriptor
ITEM_KIND_BOUNDARY_REQUEST: ItemKind
ITEM_KIND_CONTRACT: ItemKind
ITEM_KIND_DEBT_RECORD: ItemKind
ITEM_KIND_POLICY: ItemKind
ITEM_KIND_SUMMARY: ItemKind
ITEM_KIND_TOOL_OUTPUT: ItemKind
ITEM_KIND_UNSPECIFIED: ItemKind
LIFETIME_DURABLE: Lifetime
LIFETIME_SESSION: Lifetime
LIFETIME_TASK: Lifetime
LIFETIME_UNSPECIFIED: Lifetime
PROMOTION_STATE_APPROVED: PromotionState
PROMOTION_STATE_PROPOSED: PromotionState
PROMOTION_STATE_REJECTED: PromotionState
PROMOTION_STATE_UNSPECIFIED: PromotionState
SCOPE_AGENT: Scope
SCOPE_ORGANISATION: Scope
SCOPE_SESSION: Scope
SCOPE_TASK: Scope
SCOPE_UNSPECIFIED: Scope
SCOPE_WORKSPACE: Scope
SOURCE_ORIGIN_AGENT: SourceOrigin
SOURCE_ORIGIN_GOVERNANCE: SourceOrigin
SOURCE_ORIGIN_POLICY: SourceOrigin
SOURCE_ORIGIN_RETRIEVAL: SourceOrigin
SOURCE_ORIGIN_SUMMARY: SourceOrigin
SOURCE_ORIGIN_TOOL: SourceOrigin
SOURCE_ORIGIN_UNSPECIFIED: SourceOrigin
SOURCE_ORIGIN_USER: SourceOrigin
TRANSITION_KIND_DERIVE_HANDOFF: TransitionKind
TRANSITION_KIND_PROMOTE: TransitionKind
TRANSITION_KIND_PROPOSE: TransitionKind
TRANSITION_KIND_REJECT: TransitionKind
TRANSITION_KIND_RESOLVE_CONFLICT: TransitionKind
TRANSITION_KIND_SUPERSEDE: TransitionKind
TRANSITION_KIND_UNSPECIFIED: TransitionKind

class CanonItem(_message.Message):
    __slots__ = ["authority_level", "canon_item_id", "conflict_state", "conflicts_with", "content_hash", "contract", "debt", "handoff_filter_declared", "handoff_parent_ref", "kind", "lifetime", "promotion_authority", "promotion_state", "provenance_ref", "scope", "source_origin", "supersedes_ref", "text"]
    AUTHORITY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    CANON_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_WITH_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_STATE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_FIELD_NUMBER: _ClassVar[int]
    DEBT_FIELD_NUMBER: _ClassVar[int]
    HANDOFF_FILTER_DECLARED_FIELD_NUMBER: _ClassVar[int]
    HANDOFF_PARENT_REF_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LIFETIME_FIELD_NUMBER: _ClassVar[int]
    PROMOTION_AUTHORITY_FIELD_NUMBER: _ClassVar[int]
    PROMOTION_STATE_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_REF_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_REF_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    authority_level: AuthorityLevel
    canon_item_id: str
    conflict_state: ConflictState
    conflicts_with: str
    content_hash: str
    contract: _contract_pb2.Contract
    debt: DebtRecord
    handoff_filter_declared: bool
    handoff_parent_ref: str
    kind: ItemKind
    lifetime: Lifetime
    promotion_authority: str
    promotion_state: PromotionState
    provenance_ref: str
    scope: Scope
    source_origin: SourceOrigin
    supersedes_ref: str
    text: str
    def __init__(self, canon_item_id: _Optional[str] = ..., content_hash: _Optional[str] = ..., source_origin: _Optional[_Union[SourceOrigin, str]] = ..., authority_level: _Optional[_Union[AuthorityLevel, str]] = ..., provenance_ref: _Optional[str] = ..., scope: _Optional[_Union[Scope, str]] = ..., lifetime: _Optional[_Union[Lifetime, str]] = ..., promotion_state: _Optional[_Union[PromotionState, str]] = ..., promotion_authority: _Optional[str] = ..., conflict_state: _Optional[_Union[ConflictState, str]] = ..., supersedes_ref: _Optional[str] = ..., conflicts_with: _Optional[str] = ..., kind: _Optional[_Union[ItemKind, str]] = ..., contract: _Optional[_Union[_contract_pb2.Contract, _Mapping]] = ..., text: _Optional[str] = ..., handoff_parent_ref: _Optional[str] = ..., handoff_filter_declared: bool = ..., debt: _Optional[_Union[DebtRecord, _Mapping]] = ...) -> None: ...

class ClassifiedItem(_message.Message):
    __slots__ = ["item", "reasons"]
    CLASS_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    item: CanonItem
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, item: _Optional[_Union[CanonItem, _Mapping]] = ..., reasons: _Optional[_Iterable[str]] = ..., **kwargs) -> None: ...

class DebtRecord(_message.Message):
    __slots__ = ["added_routes", "decision", "new_contract_ref", "old_contract_ref", "rationale", "relaxed_limits", "reruns"]
    ADDED_ROUTES_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    NEW_CONTRACT_REF_FIELD_NUMBER: _ClassVar[int]
    OLD_CONTRACT_REF_FIELD_NUMBER: _ClassVar[int]
    RATIONALE_FIELD_NUMBER: _ClassVar[int]
    RELAXED_LIMITS_FIELD_NUMBER: _ClassVar[int]
    RERUNS_FIELD_NUMBER: _ClassVar[int]
    added_routes: _containers.RepeatedCompositeFieldContainer[DebtRoute]
    decision: AssuranceDecision
    new_contract_ref: str
    old_contract_ref: str
    rationale: str
    relaxed_limits: _containers.RepeatedScalarFieldContainer[str]
    reruns: _containers.RepeatedCompositeFieldContainer[FamilyRerun]
    def __init__(self, old_contract_ref: _Optional[str] = ..., new_contract_ref: _Optional[str] = ..., added_routes: _Optional[_Iterable[_Union[DebtRoute, _Mapping]]] = ..., relaxed_limits: _Optional[_Iterable[str]] = ..., reruns: _Optional[_Iterable[_Union[FamilyRerun, _Mapping]]] = ..., decision: _Optional[_Union[AssuranceDecision, str]] = ..., rationale: _Optional[str] = ...) -> None: ...

class DebtRoute(_message.Message):
    __slots__ = ["change", "failure_families", "route", "widened"]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FAMILIES_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    WIDENED_FIELD_NUMBER: _ClassVar[int]
    change: str
    failure_families: _containers.RepeatedScalarFieldContainer[str]
    route: str
    widened: bool
    def __init__(self, route: _Optional[str] = ..., widened: bool = ..., change: _Optional[str] = ..., failure_families: _Optional[_Iterable[str]] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ["body", "hash", "kind", "prev_hash", "recorded_at", "ref", "seq"]
    BODY_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PREV_HASH_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    body: bytes
    hash: str
    kind: str
    prev_hash: str
    recorded_at: _timestamp_pb2.Timestamp
    ref: str
    seq: int
    def __init__(self, seq: _Optional[int] = ..., recorded_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[str] = ..., ref: _Optional[str] = ..., body: _Optional[bytes] = ..., prev_hash: _Optional[str] = ..., hash: _Optional[str] = ...) -> None: ...

class FamilyRerun(_message.Message):
    __slots__ = ["completed", "confidentiality_exposures", "episodes", "episodes_ref", "failure_family", "false_denials", "reviews", "unsafe_effects"]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    CONFIDENTIALITY_EXPOSURES_FIELD_NUMBER: _ClassVar[int]
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    EPISODES_REF_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FAMILY_FIELD_NUMBER: _ClassVar[int]
    FALSE_DENIALS_FIELD_NUMBER: _ClassVar[int]
    REVIEWS_FIELD_NUMBER: _ClassVar[int]
    UNSAFE_EFFECTS_FIELD_NUMBER: _ClassVar[int]
    completed: int
    confidentiality_exposures: int
    episodes: int
    episodes_ref: str
    failure_family: str
    false_denials: int
    reviews: int
    unsafe_effects: int
    def __init__(self, failure_family: _Optional[str] = ..., episodes_ref: _Optional[str] = ..., episodes: _Optional[int] = ..., completed: _Optional[int] = ..., unsafe_effects: _Optional[int] = ..., confidentiality_exposures: _Optional[int] = ..., false_denials: _Optional[int] = ..., reviews: _Optional[int] = ...) -> None: ...

class HandoffFilter(_message.Message):
    __slots__ = ["destinations", "fields", "max_actions", "max_amount", "sources", "tools", "visible_facts"]
    DESTINATIONS_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    MAX_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_FACTS_FIELD_NUMBER: _ClassVar[int]
    destinations: _containers.RepeatedScalarFieldContainer[str]
    fields: _containers.RepeatedScalarFieldContainer[str]
    max_actions: int
    max_amount: _contract_pb2.Money
    sources: _containers.RepeatedScalarFieldContainer[str]
    tools: _containers.RepeatedScalarFieldContainer[str]
    visible_facts: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., sources: _Optional[_Iterable[str]] = ..., destinations: _Optional[_Iterable[str]] = ..., visible_facts: _Optional[_Iterable[str]] = ..., max_amount: _Optional[_Union[_contract_pb2.Money, _Mapping]] = ..., max_actions: _Optional[int] = ..., tools: _Optional[_Iterable[str]] = ...) -> None: ...

class Transition(_message.Message):
    __slots__ = ["actor", "at", "filter", "item", "item_id", "kind", "note", "other_id"]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    OTHER_ID_FIELD_NUMBER: _ClassVar[int]
    actor: str
    at: _timestamp_pb2.Timestamp
    filter: HandoffFilter
    item: CanonItem
    item_id: str
    kind: TransitionKind
    note: str
    other_id: str
    def __init__(self, kind: _Optional[_Union[TransitionKind, str]] = ..., at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., actor: _Optional[str] = ..., item: _Optional[_Union[CanonItem, _Mapping]] = ..., item_id: _Optional[str] = ..., other_id: _Optional[str] = ..., note: _Optional[str] = ..., filter: _Optional[_Union[HandoffFilter, _Mapping]] = ...) -> None: ...

class SourceOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class AuthorityLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Scope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Lifetime(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class PromotionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ConflictState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ItemKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class CanonClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class AssuranceDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TransitionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
