// Package config reads the YAML configuration files of Ambit's binaries:
// strictly (an unknown or misspelt key is an error that names it), with
// durations written as Go durations ("5m", "3s").
//
// Entry points: [Load] reads a file into a struct with json tags;
// [LoadChecked] and [LoadAs] also fill defaults and validate a [Checked]
// configuration; [Write] writes one; [Duration] is a duration key.
//
// A struct embedded with the tag `json:",inline"` has its keys promoted
// into the embedding struct (encoding/json treats an embedded struct
// without a JSON name as part of its parent), so keys several binaries
// share can be declared once and stay strict.
package config
