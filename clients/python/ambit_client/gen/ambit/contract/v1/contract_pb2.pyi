from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

APERTURE_BINDING: Aperture
APERTURE_CONTRACT: Aperture
APERTURE_EPISTEMIC: Aperture
APERTURE_EXECUTIVE: Aperture
APERTURE_LEDGER: Aperture
APERTURE_REFLEXIVE: Aperture
APERTURE_UNSPECIFIED: Aperture
DESCRIPTOR: _descriptor.FileDescriptor
OUTCOME_ALLOW: Outcome
OUTCOME_DENY: Outcome
OUTCOME_REVIEW: Outcome
OUTCOME_UNSPECIFIED: Outcome
PROVENANCE_INSTRUCTION_BEARING: Provenance
PROVENANCE_TRUSTED: Provenance
PROVENANCE_UNSPECIFIED: Provenance
PROVENANCE_UNTRUSTED: Provenance
REASON_CODE_ACTION_COUNT_EXCEEDS_GRANT: ReasonCode
REASON_CODE_ALL_APERTURES_SATISFIED: ReasonCode
REASON_CODE_AMOUNT_EXCEEDS_HARD_LIMIT: ReasonCode
REASON_CODE_APPROVAL_REQUIRED: ReasonCode
REASON_CODE_CONSTRAINT_VIOLATED: ReasonCode
REASON_CODE_CONTRACT_EXPIRED: ReasonCode
REASON_CODE_CONTRACT_NOT_CANONICAL: ReasonCode
REASON_CODE_CUMULATIVE_AMOUNT_EXCEEDS_GRANT: ReasonCode
REASON_CODE_CURRENCY_OUTSIDE_GRANT: ReasonCode
REASON_CODE_DESTINATION_OUTSIDE_GRANT: ReasonCode
REASON_CODE_DESTINATION_UNRESOLVED: ReasonCode
REASON_CODE_EVIDENCE_TOO_OLD: ReasonCode
REASON_CODE_FIELDS_OUTSIDE_GRANT: ReasonCode
REASON_CODE_IRREVERSIBLE_APPROVAL_REQUIRED: ReasonCode
REASON_CODE_IRREVERSIBLE_EVIDENCE_TOO_OLD: ReasonCode
REASON_CODE_IRREVERSIBLE_NOT_PERMITTED: ReasonCode
REASON_CODE_NO_TRUSTED_EVIDENCE: ReasonCode
REASON_CODE_PURPOSE_MISMATCH: ReasonCode
REASON_CODE_RECORD_EVIDENCE_MISSING: ReasonCode
REASON_CODE_RECORD_OUTSIDE_BINDING: ReasonCode
REASON_CODE_SELF_FACTS_OUTSIDE_VIEW: ReasonCode
REASON_CODE_SELF_MUTATIONS_OUTSIDE_GRANT: ReasonCode
REASON_CODE_SELF_MUTATION_FORBIDDEN: ReasonCode
REASON_CODE_SOURCE_OUTSIDE_GRANT: ReasonCode
REASON_CODE_STATE_VERSION_CHANGED: ReasonCode
REASON_CODE_SUBJECT_MISMATCH: ReasonCode
REASON_CODE_TOOL_OUTSIDE_GRANT: ReasonCode
REASON_CODE_UNCORROBORATED_EVIDENCE: ReasonCode
REASON_CODE_UNSPECIFIED: ReasonCode

class ActionAperture(_message.Message):
    __slots__ = ["allow_irreversible", "approval_over", "max_actions", "max_amount", "max_cumulative_amount", "tools"]
    ALLOW_IRREVERSIBLE_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_OVER_FIELD_NUMBER: _ClassVar[int]
    MAX_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_CUMULATIVE_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    allow_irreversible: bool
    approval_over: Money
    max_actions: int
    max_amount: Money
    max_cumulative_amount: Money
    tools: _containers.RepeatedCompositeFieldContainer[ToolGrant]
    def __init__(self, max_amount: _Optional[_Union[Money, _Mapping]] = ..., approval_over: _Optional[_Union[Money, _Mapping]] = ..., max_actions: _Optional[int] = ..., max_cumulative_amount: _Optional[_Union[Money, _Mapping]] = ..., allow_irreversible: bool = ..., tools: _Optional[_Iterable[_Union[ToolGrant, _Mapping]]] = ...) -> None: ...

class Binding(_message.Message):
    __slots__ = ["purpose", "record", "state_version", "subject", "task_id", "valid_until"]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    VALID_UNTIL_FIELD_NUMBER: _ClassVar[int]
    purpose: str
    record: RecordRef
    state_version: str
    subject: str
    task_id: str
    valid_until: _timestamp_pb2.Timestamp
    def __init__(self, task_id: _Optional[str] = ..., subject: _Optional[str] = ..., purpose: _Optional[str] = ..., state_version: _Optional[str] = ..., valid_until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., record: _Optional[_Union[RecordRef, _Mapping]] = ...) -> None: ...

class Constraint(_message.Message):
    __slots__ = ["code", "expression", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    expression: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., expression: _Optional[str] = ...) -> None: ...

class Contract(_message.Message):
    __slots__ = ["action", "binding", "contract_id", "coupling", "evidence", "reflexive", "version"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    BINDING_FIELD_NUMBER: _ClassVar[int]
    CONTRACT_ID_FIELD_NUMBER: _ClassVar[int]
    COUPLING_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    REFLEXIVE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    action: ActionAperture
    binding: Binding
    contract_id: str
    coupling: Coupling
    evidence: EvidenceAperture
    reflexive: ReflexiveAperture
    version: str
    def __init__(self, contract_id: _Optional[str] = ..., version: _Optional[str] = ..., binding: _Optional[_Union[Binding, _Mapping]] = ..., evidence: _Optional[_Union[EvidenceAperture, _Mapping]] = ..., action: _Optional[_Union[ActionAperture, _Mapping]] = ..., reflexive: _Optional[_Union[ReflexiveAperture, _Mapping]] = ..., coupling: _Optional[_Union[Coupling, _Mapping]] = ...) -> None: ...

class Coupling(_message.Message):
    __slots__ = ["forbid_self_mutation", "irreversible_max_evidence_age_seconds", "irreversible_requires_approval", "require_trusted_corroboration", "revoke_on_state_change"]
    FORBID_SELF_MUTATION_FIELD_NUMBER: _ClassVar[int]
    IRREVERSIBLE_MAX_EVIDENCE_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IRREVERSIBLE_REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_TRUSTED_CORROBORATION_FIELD_NUMBER: _ClassVar[int]
    REVOKE_ON_STATE_CHANGE_FIELD_NUMBER: _ClassVar[int]
    forbid_self_mutation: bool
    irreversible_max_evidence_age_seconds: int
    irreversible_requires_approval: bool
    require_trusted_corroboration: bool
    revoke_on_state_change: bool
    def __init__(self, require_trusted_corroboration: bool = ..., irreversible_max_evidence_age_seconds: _Optional[int] = ..., irreversible_requires_approval: bool = ..., revoke_on_state_change: bool = ..., forbid_self_mutation: bool = ...) -> None: ...

class Decision(_message.Message):
    __slots__ = ["outcome", "reasons"]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    outcome: Outcome
    reasons: _containers.RepeatedCompositeFieldContainer[Reason]
    def __init__(self, outcome: _Optional[_Union[Outcome, str]] = ..., reasons: _Optional[_Iterable[_Union[Reason, _Mapping]]] = ...) -> None: ...

class DerivedField(_message.Message):
    __slots__ = ["expression", "name"]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expression: str
    name: str
    def __init__(self, name: _Optional[str] = ..., expression: _Optional[str] = ...) -> None: ...

class DestinationClass(_message.Message):
    __slots__ = ["name", "when"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    WHEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    when: str
    def __init__(self, name: _Optional[str] = ..., when: _Optional[str] = ...) -> None: ...

class EvidenceAperture(_message.Message):
    __slots__ = ["fields", "max_age_seconds", "sources"]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    max_age_seconds: int
    sources: _containers.RepeatedCompositeFieldContainer[SourceGrant]
    def __init__(self, fields: _Optional[_Iterable[str]] = ..., sources: _Optional[_Iterable[_Union[SourceGrant, _Mapping]]] = ..., max_age_seconds: _Optional[int] = ...) -> None: ...

class EvidenceItem(_message.Message):
    __slots__ = ["age_seconds", "fields", "provenance", "quarantined", "record", "source"]
    AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    age_seconds: int
    fields: _containers.RepeatedScalarFieldContainer[str]
    provenance: Provenance
    quarantined: bool
    record: str
    source: str
    def __init__(self, source: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., age_seconds: _Optional[int] = ..., provenance: _Optional[_Union[Provenance, str]] = ..., record: _Optional[str] = ..., quarantined: bool = ...) -> None: ...

class Facts(_message.Message):
    __slots__ = ["action_count", "amount", "approval_present", "current_state_version", "destination", "destination_unresolved", "evidence", "irreversible", "prior_amount", "purpose", "record", "self_mutations", "self_queries", "state_version", "subject", "tool", "violations"]
    ACTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_PRESENT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_UNRESOLVED_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    IRREVERSIBLE_FIELD_NUMBER: _ClassVar[int]
    PRIOR_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    PURPOSE_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SELF_MUTATIONS_FIELD_NUMBER: _ClassVar[int]
    SELF_QUERIES_FIELD_NUMBER: _ClassVar[int]
    STATE_VERSION_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    action_count: int
    amount: Money
    approval_present: bool
    current_state_version: str
    destination: str
    destination_unresolved: bool
    evidence: _containers.RepeatedCompositeFieldContainer[EvidenceItem]
    irreversible: bool
    prior_amount: Money
    purpose: str
    record: str
    self_mutations: _containers.RepeatedScalarFieldContainer[str]
    self_queries: _containers.RepeatedScalarFieldContainer[str]
    state_version: str
    subject: str
    tool: str
    violations: _containers.RepeatedCompositeFieldContainer[Violation]
    def __init__(self, subject: _Optional[str] = ..., purpose: _Optional[str] = ..., state_version: _Optional[str] = ..., current_state_version: _Optional[str] = ..., evidence: _Optional[_Iterable[_Union[EvidenceItem, _Mapping]]] = ..., tool: _Optional[str] = ..., destination: _Optional[str] = ..., amount: _Optional[_Union[Money, _Mapping]] = ..., action_count: _Optional[int] = ..., prior_amount: _Optional[_Union[Money, _Mapping]] = ..., irreversible: bool = ..., approval_present: bool = ..., self_queries: _Optional[_Iterable[str]] = ..., self_mutations: _Optional[_Iterable[str]] = ..., record: _Optional[str] = ..., destination_unresolved: bool = ..., violations: _Optional[_Iterable[_Union[Violation, _Mapping]]] = ...) -> None: ...

class Money(_message.Message):
    __slots__ = ["currency_code", "minor_units"]
    CURRENCY_CODE_FIELD_NUMBER: _ClassVar[int]
    MINOR_UNITS_FIELD_NUMBER: _ClassVar[int]
    currency_code: str
    minor_units: int
    def __init__(self, currency_code: _Optional[str] = ..., minor_units: _Optional[int] = ...) -> None: ...

class Reason(_message.Message):
    __slots__ = ["aperture", "code", "constraint", "detail"]
    APERTURE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    aperture: Aperture
    code: ReasonCode
    constraint: str
    detail: str
    def __init__(self, aperture: _Optional[_Union[Aperture, str]] = ..., detail: _Optional[str] = ..., code: _Optional[_Union[ReasonCode, str]] = ..., constraint: _Optional[str] = ...) -> None: ...

class RecordArgument(_message.Message):
    __slots__ = ["argument", "source"]
    ARGUMENT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    argument: str
    source: str
    def __init__(self, source: _Optional[str] = ..., argument: _Optional[str] = ...) -> None: ...

class RecordRef(_message.Message):
    __slots__ = ["key", "source"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    key: str
    source: str
    def __init__(self, source: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class ReflexiveAperture(_message.Message):
    __slots__ = ["mutable_facts", "visible_facts"]
    MUTABLE_FACTS_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_FACTS_FIELD_NUMBER: _ClassVar[int]
    mutable_facts: _containers.RepeatedScalarFieldContainer[str]
    visible_facts: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, visible_facts: _Optional[_Iterable[str]] = ..., mutable_facts: _Optional[_Iterable[str]] = ...) -> None: ...

class SourceGrant(_message.Message):
    __slots__ = ["derived", "fields", "name", "provenance", "quarantined", "record_field"]
    DERIVED_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_FIELD_NUMBER: _ClassVar[int]
    derived: _containers.RepeatedCompositeFieldContainer[DerivedField]
    fields: _containers.RepeatedScalarFieldContainer[str]
    name: str
    provenance: Provenance
    quarantined: _containers.RepeatedScalarFieldContainer[str]
    record_field: str
    def __init__(self, name: _Optional[str] = ..., provenance: _Optional[_Union[Provenance, str]] = ..., fields: _Optional[_Iterable[str]] = ..., derived: _Optional[_Iterable[_Union[DerivedField, _Mapping]]] = ..., quarantined: _Optional[_Iterable[str]] = ..., record_field: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ["arguments_json", "tool"]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    tool: str
    def __init__(self, tool: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class ToolGrant(_message.Message):
    __slots__ = ["amount_argument", "constraints", "description", "destinations", "input_schema", "irreversible", "name", "record"]
    AMOUNT_ARGUMENT_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DESTINATIONS_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    IRREVERSIBLE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    amount_argument: str
    constraints: _containers.RepeatedCompositeFieldContainer[Constraint]
    description: str
    destinations: _containers.RepeatedCompositeFieldContainer[DestinationClass]
    input_schema: _struct_pb2.Struct
    irreversible: bool
    name: str
    record: RecordArgument
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., destinations: _Optional[_Iterable[_Union[DestinationClass, _Mapping]]] = ..., amount_argument: _Optional[str] = ..., record: _Optional[_Union[RecordArgument, _Mapping]] = ..., irreversible: bool = ..., constraints: _Optional[_Iterable[_Union[Constraint, _Mapping]]] = ...) -> None: ...

class Violation(_message.Message):
    __slots__ = ["code", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class Provenance(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Aperture(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ReasonCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
