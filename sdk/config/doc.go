// Package config reads the YAML configuration files of Ambit's binaries
// strictly, through package document: a duplicate key, an unknown or
// misspelt key and a value of the wrong kind are errors that name the
// file, the line and the key path. Durations are written as Go durations
// ("5m", "3s").
//
// Every key can be overridden by an environment variable: [EnvPrefix]
// followed by the key path in upper case, joined by underscores
// (AMBIT_LOG_LEVEL, AMBIT_LISTEN_AGENT); [EnvVars] lists them for a
// configuration type.
//
// Entry points: [Load] reads a file into a struct with json tags and
// [LoadEnv] also applies environment overrides; [LoadChecked] and [LoadAs]
// also fill defaults and validate a [Checked] configuration; [Write]
// writes one; [Duration] is a duration key.
//
// A struct embedded with the tag `json:",inline"` has its keys promoted
// into the embedding struct (encoding/json treats an embedded struct
// without a JSON name as part of its parent), so keys several binaries
// share can be declared once and stay strict.
package config
