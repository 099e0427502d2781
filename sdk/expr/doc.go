// Package expr compiles and evaluates the CEL expressions that contracts
// and adapter configurations declare: destination classes and constraints
// of tools ([Tool]), derived fields and state versions of sources
// ([Record]), the arguments of an upstream call made for a granted call
// ([Mapping]), what such a call answered ([Reply]) and readback
// postconditions ([Readback]).
//
// An expression is compiled and type-checked once, when its contract or
// configuration is loaded ([Env.Compile]); evaluating it ([Program.Bool],
// [Program.Value], [Program.List], [Program.Plain]) is a pure function of
// the variables it is given, with a bounded cost. [Program.Reads] names the
// fields of a variable an expression reads, so that a configuration can
// refuse one that reads a field it never declared.
package expr
