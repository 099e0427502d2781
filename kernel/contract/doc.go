// Package contract loads contraction contracts and offline proposals from
// YAML or JSON, validates them, and maps them onto the evaluator's types.
//
// Files are decoded strictly onto the protobuf messages of
// ambit.contract.v1: an unknown field, an unknown enum value or a
// contradictory limit is refused with a message that names the field.
// [Load] and [Parse] read a contract; [Compile] turns a valid one into an
// [evaluate.Contract] (a [Compiler] does so sharing what identical tool
// grants and derived fields compile to); [Facts] and [DecisionProto] map the evaluator's input
// and output to and from the wire. The seed's profiles ship embedded
// ([Profiles]).
package contract
