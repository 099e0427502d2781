// Package expr compiles and evaluates the CEL expressions that contracts
// and adapter configurations declare: destination classes and constraints
// of tools, derived fields of sources, readback postconditions, and the
// argument mappings of upstream calls (an executor's columns, body or
// arguments, and the reference it reads from the reply).
//
// An expression is compiled and type-checked once, when its contract or
// configuration is loaded ([Env.Compile]); evaluating it ([Program.Bool],
// [Program.Value], [Program.List], [Program.Plain]) is a pure function of the variables it is given, with a
// bounded cost.
package expr
