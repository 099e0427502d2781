package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ambitkernel/ambit/adapters/action"
	"github.com/ambitkernel/ambit/adapters/evidence"
	"github.com/ambitkernel/ambit/adapters/gateway"
	"github.com/ambitkernel/ambit/kernel/cli"
	"github.com/ambitkernel/ambit/kernel/server"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/verifier/verify"
)

// modulePrefix starts the import path of every package of the
// repository; the rest of the path is the package's folder.
const modulePrefix = "github.com/ambitkernel/ambit/"

// Process is one configuration file the reference documents.
type Process struct {
	// Name is the binary, e.g. ambit-kernel.
	Name string
	// Config points to a zero configuration of the binary's type.
	Config any
	// Example is the example file in this folder, empty when there is
	// none.
	Example string
	// Load reads a file strictly as the binary does, with its defaults
	// and checks.
	Load func(path string) error
	// Env tells whether environment variables override the file's keys.
	Env bool
}

// Processes are the configuration files of Ambit's binaries, in the order
// the reference lists them.
func Processes() []Process {
	return []Process{
		{"ambit-kernel", &server.Config{}, "kernel.yaml", func(p string) error { _, err := config.LoadAs[server.Config](p); return err }, true},
		{"ambit-evidence", &evidence.Config{}, "evidence.yaml", func(p string) error { _, err := evidence.LoadConfig(p); return err }, true},
		{"ambit-action", &action.Config{}, "action.yaml", func(p string) error { _, err := action.LoadConfig(p); return err }, true},
		{"ambit-verifier", &verify.Config{}, "verifier.yaml", func(p string) error { _, err := verify.LoadConfig(p); return err }, true},
		{"ambit-mcp", &gateway.Config{}, "mcp.yaml", func(p string) error { _, err := config.LoadAs[gateway.Config](p); return err }, true},
		// Not a process: ambitctl's stored contexts.
		{"ambitctl contexts", &cli.ContextFile{}, "", func(p string) error { return config.Load(p, &cli.ContextFile{}) }, false},
	}
}

// PerAgentDir holds the per-agent topology's examples: the one kernel
// shared by every agent, and one agent's own sidecars.
const PerAgentDir = "per-agent"

// PerAgent names the per-agent topology's example of each binary, in
// PerAgentDir: the kernel's, and agent-2's own evidence adapter, action
// adapter, verifier and ambit-mcp. Each shows every key, as the examples
// of Processes do.
func PerAgent() map[string]string {
	return map[string]string{
		"ambit-kernel":   "kernel.yaml",
		"ambit-evidence": "evidence-agent-2.yaml",
		"ambit-action":   "action-agent-2.yaml",
		"ambit-verifier": "verifier-agent-2.yaml",
		"ambit-mcp":      "mcp-agent-2.yaml",
	}
}

// meanings documents keys whose Go field carries no comment of its own,
// by package path, type and field; a key without either is an error.
var meanings = map[string]string{
	"kernel/server.Config.Durability":    "How a commit reaches the disk: full fsyncs every commit (survives power loss); normal survives a process crash but may lose the last commits on power loss.",
	"kernel/server.Config.CapabilityTTL": "How long the one-time capability issued with an ALLOW decision may be redeemed.",
	"kernel/server.Checkpoints.Every":    "A checkpoint is also signed this long after the last one when any entry was appended since.",
	"kernel/server.Listen.Agent":         "host:port of the agent listener: proposals, the self-view and boundary-change requests, for agent certificates.",
	"kernel/server.Listen.Adapter":       "host:port of the adapter listener: authorised reads, redemption, effect and readback receipts and state changes, for the sidecars' certificates.",
	"kernel/server.Listen.Governance":    "host:port of the governance listener: contracts, promotion, tasks, approvals, checkpoints and audit, for governance certificates.",
	"kernel/server.Peers.Evidence":       "Identities whose evidence receipts the kernel accepts; their public keys (<name>.sign.pub) are read from pki_dir.",
	"kernel/server.Peers.Action":         "Identities whose effect receipts the kernel accepts; their public keys are read from pki_dir.",
	"kernel/server.Peers.Verifier":       "Identities whose readback receipts the kernel accepts; their public keys are read from pki_dir.",
	"adapters/gateway.Config.Action":     "host:port of the agent's action adapter.",
	"adapters/gateway.Config.Verifier":   "host:port of the agent's verifier.",
	"sdk/mcpconn.Config.Command":         "The server's command line (argv), started by the process and spoken to over stdio. Give command or url, not both.",
	"sdk/mcpconn.Config.URL":             "The server's streamable HTTP endpoint (http or https). Give command or url, not both.",
}

// defaults documents defaults that are not set by the configuration's
// ApplyDefaults but where the key is used, by binary and key path.
var defaults = map[string]string{
	"* log_level":                                "`info`",
	"ambit-kernel checkpoints.dir":               "the database's path + `.checkpoints`",
	"ambit-kernel checkpoints.origin":            "`ambit-kernel/` + identity",
	"ambit-kernel checkpoints.every_entries":     "`1000`",
	"ambit-kernel checkpoints.every":             "`1s`",
	"ambit-kernel checkpoints.keep":              "`10000`",
	"ambit-kernel ledger_snapshot_every":         "`10000`",
	"ambit-action executors.<name>.http.timeout": "`" + action.DefaultExecutorTimeout.String() + "`",
	"ambit-action executors.<name>.mcp.timeout":  "`" + action.DefaultExecutorTimeout.String() + "`",
}

// Key is one documented configuration key.
type Key struct {
	// Path is the key path: "listen.agent"; <name> stands for a map's
	// key and [] for a list's element ("readbacks.<name>.checks[].code").
	Path    string
	Type    string
	Default string
	// Env is the environment variable that overrides the key, if any.
	Env string
	Doc string
}

// Section is one binary's keys.
type Section struct {
	Process Process
	// TypeName is the Go type, e.g. server.Config, and Doc its comment.
	TypeName, Doc string
	Keys          []Key
}

// Sections walks every process's configuration type: the keys come from
// the json tags, their meaning from the fields' comments in the source
// under root (the repository's top folder), their defaults from the
// values ApplyDefaults sets.
func Sections(root string) ([]Section, error) {
	src := &sources{root: root, pkgs: map[string]*pkgDocs{}}
	used := map[string]bool{}
	var out []Section
	for _, p := range Processes() {
		t := reflect.TypeOf(p.Config).Elem()
		doc, err := src.typeDoc(t)
		if err != nil {
			return nil, err
		}
		s := Section{Process: p, TypeName: shortType(t), Doc: doc}
		env := map[string]string{}
		if p.Env {
			if env, err = envVars(p.Config); err != nil {
				return nil, err
			}
		}
		applied := reflect.New(t)
		if c, ok := applied.Interface().(config.Checked); ok {
			c.ApplyDefaults()
		}
		w := walker{src: src, process: p.Name, env: env, used: used}
		if err := w.walk(t, applied.Elem(), "", &s.Keys); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	for k := range defaults {
		if !used["default "+k] {
			return nil, fmt.Errorf("the defaults table names %q, which is no key", k)
		}
	}
	for k := range meanings {
		if !used["meaning "+k] {
			return nil, fmt.Errorf("the meanings table names %q, which is no field", k)
		}
	}
	return out, nil
}

// envVars maps key paths to the environment variables that override them.
func envVars(cfg any) (map[string]string, error) {
	vars, err := config.EnvVars(cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, v := range vars {
		name, path, _ := strings.Cut(v, " ")
		out[path] = name
	}
	return out, nil
}

var (
	durationType    = reflect.TypeFor[config.Duration]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

type walker struct {
	src     *sources
	process string
	env     map[string]string
	used    map[string]bool
}

// walk appends the keys of struct type t; v holds t's defaults, or is
// invalid inside a map or a list, where there are none.
func (w *walker) walk(t reflect.Type, v reflect.Value, prefix string, out *[]Key) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		if f.Anonymous && name == "" {
			// Inline: its keys are the parent's.
			if err := w.walk(f.Type, fv, prefix, out); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		path := prefix + name
		doc, err := w.doc(t, f)
		if err != nil {
			return err
		}
		k := Key{Path: path, Type: typeName(f.Type), Default: w.defaultOf(path, fv), Env: w.env[path], Doc: doc}
		*out = append(*out, k)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case isObject(ft):
			var inner reflect.Value
			if fv.IsValid() && f.Type.Kind() != reflect.Pointer {
				inner = fv
			}
			if err := w.walk(ft, inner, path+".", out); err != nil {
				return err
			}
		case ft.Kind() == reflect.Map && isObject(deref(ft.Elem())):
			if err := w.walk(deref(ft.Elem()), reflect.Value{}, path+".<name>.", out); err != nil {
				return err
			}
		case ft.Kind() == reflect.Slice && isObject(deref(ft.Elem())):
			if err := w.walk(deref(ft.Elem()), reflect.Value{}, path+"[].", out); err != nil {
				return err
			}
		}
	}
	return nil
}

// doc is a field's meaning: the meanings table, else its comment, else
// its type's comment.
func (w *walker) doc(parent reflect.Type, f reflect.StructField) (string, error) {
	id := strings.TrimPrefix(parent.PkgPath(), modulePrefix) + "." + parent.Name() + "." + f.Name
	if m, ok := meanings[id]; ok {
		w.used["meaning "+id] = true
		return m, nil
	}
	doc, err := w.src.fieldDoc(parent, f.Name)
	if err != nil || doc != "" {
		return doc, err
	}
	ft := deref(f.Type)
	if ft.Name() != "" && strings.HasPrefix(ft.PkgPath(), modulePrefix) && ft != durationType {
		if doc, err = w.src.typeDoc(ft); err != nil || doc != "" {
			return doc, err
		}
	}
	return "", fmt.Errorf("%s %s (%s): no comment on the field or its type: document it, or add it to the meanings table", w.process, id, f.Type)
}

func (w *walker) defaultOf(path string, v reflect.Value) string {
	for _, key := range []string{w.process + " " + path, "* " + path} {
		if d, ok := defaults[key]; ok {
			w.used["default "+key] = true
			return d
		}
	}
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	switch {
	case v.Type() == durationType:
		return "`" + time.Duration(v.Int()).String() + "`"
	case v.Kind() == reflect.String:
		return "`" + v.String() + "`"
	case v.Kind() == reflect.Bool:
		return "`" + strconv.FormatBool(v.Bool()) + "`"
	case v.CanInt():
		return "`" + strconv.FormatInt(v.Int(), 10) + "`"
	case v.CanUint():
		return "`" + strconv.FormatUint(v.Uint(), 10) + "`"
	}
	js, _ := json.Marshal(v.Interface())
	return "`" + string(js) + "`"
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// isObject is a struct written as a YAML mapping of its own keys (not a
// type with its own decoding, such as a duration).
func isObject(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(jsonUnmarshaler)
}

// typeName is how a key's value is written.
func typeName(t reflect.Type) string {
	optional := t.Kind() == reflect.Pointer
	t = deref(t)
	var s string
	switch {
	case t == durationType:
		s = "duration"
	case isObject(t):
		s = "object"
	case t.Kind() == reflect.String:
		s = "string"
	case t.Kind() == reflect.Bool:
		s = "bool"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		s = "integer"
	case t.Kind() == reflect.Slice:
		s = "list of " + plural(typeName(t.Elem()))
	case t.Kind() == reflect.Map:
		s = "map: name → " + typeName(t.Elem())
	default:
		s = t.String()
	}
	if optional {
		s += ", optional"
	}
	return s
}

func plural(s string) string {
	switch {
	case strings.HasPrefix(s, "list of"), strings.HasPrefix(s, "map"):
		return s
	case s == "object":
		return "objects"
	}
	return s + "s"
}

func shortType(t reflect.Type) string {
	return filepath.Base(t.PkgPath()) + "." + t.Name()
}

// sources reads doc comments from the repository's Go source.
type sources struct {
	root string
	pkgs map[string]*pkgDocs
}

type pkgDocs struct {
	types  map[string]string
	fields map[string]string // "Type.Field"
}

func (s *sources) pkg(path string) (*pkgDocs, error) {
	if p, ok := s.pkgs[path]; ok {
		return p, nil
	}
	if !strings.HasPrefix(path, modulePrefix) {
		return nil, fmt.Errorf("package %s is not in this repository", path)
	}
	dir := filepath.Join(s.root, filepath.FromSlash(strings.TrimPrefix(path, modulePrefix)))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	p := &pkgDocs{types: map[string]string{}, fields: map[string]string{}}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(g.Specs) == 1 {
					doc = g.Doc
				}
				p.types[ts.Name.Name] = clean(doc.Text())
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					text := fl.Doc.Text()
					if text == "" {
						text = fl.Comment.Text()
					}
					for _, n := range fl.Names {
						p.fields[ts.Name.Name+"."+n.Name] = clean(text)
					}
				}
			}
		}
	}
	s.pkgs[path] = p
	return p, nil
}

func (s *sources) typeDoc(t reflect.Type) (string, error) {
	p, err := s.pkg(t.PkgPath())
	if err != nil {
		return "", err
	}
	return p.types[t.Name()], nil
}

func (s *sources) fieldDoc(t reflect.Type, field string) (string, error) {
	p, err := s.pkg(t.PkgPath())
	if err != nil {
		return "", err
	}
	return p.fields[t.Name()+"."+field], nil
}

// docLink is a Go doc link, [Name] or [pkg.Name].
var docLink = regexp.MustCompile(`\[([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)\]`)

// clean makes a comment one paragraph, its doc links code.
func clean(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return docLink.ReplaceAllString(s, "`$1`")
}

// Reference renders the sections as the Markdown of config.md.
func Reference(root string) ([]byte, error) {
	sections, err := Sections(root)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`# Configuration reference

<!-- Generated by "go generate ./deploy" from the configuration structs; edit
their comments, not this file. deploy's tests fail when it is out of step. -->

Every Ambit process reads one YAML file named by ` + "`--config FILE`" + `, strictly: a
duplicate key, an unknown or misspelt key and a value of the wrong kind are
errors naming the file, the line and the key. Every key outside a map can
also be set by the environment variable in the table (` + "`" + config.EnvPrefix + "`" + ` and the key
path in upper case); a variable holding a list, a map or a number is read
as YAML. Durations are written as Go durations (` + "`500ms`, `5s`, `5m`" + `).
Relative paths are relative to the working directory. In a key path,
` + "`<name>`" + ` stands for a key of a map and ` + "`[]`" + ` for an element of a list.
A key without a default is required when the meaning says so, and
otherwise off or empty.

`)
	for _, s := range sections {
		p := s.Process
		fmt.Fprintf(&b, "- [%s](#%s)\n", p.Name, strings.ReplaceAll(p.Name, " ", "-"))
	}
	for _, s := range sections {
		p := s.Process
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", p.Name, s.Doc)
		if p.Example != "" {
			fmt.Fprintf(&b, "Go type `%s`; example with every key: [%s](%s).\n\n", s.TypeName, p.Example, p.Example)
		} else {
			fmt.Fprintf(&b, "Go type `%s`.\n\n", s.TypeName)
		}
		b.WriteString("| key | type | default | environment | meaning |\n| --- | --- | --- | --- | --- |\n")
		for _, k := range s.Keys {
			env := ""
			if k.Env != "" {
				env = "`" + k.Env + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Path, k.Type, cell(k.Default), env, cell(k.Doc))
		}
	}
	return b.Bytes(), nil
}

// cell escapes a table cell; an empty one shows a dash.
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// WriteReference writes config.md in dir, the deploy folder of the
// repository.
func WriteReference(dir string) error {
	md, err := Reference(filepath.Join(dir, ".."))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.md"), md, 0o644)
}
