package evidence_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambitkernel/ambit/adapters/evidence"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	"github.com/ambitkernel/ambit/sdk/config"
	"github.com/ambitkernel/ambit/sdk/service"
	"github.com/ambitkernel/ambit/sdk/service/servicetest"
)

func TestValidateRead(t *testing.T) {
	many := make([]string, evidence.MaxFields+1)
	for i := range many {
		many[i] = "f" + strings.Repeat("x", i)
	}
	ok := &evidencev1.ReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-1001", Fields: []string{"receipt_total"}}
	tests := []struct {
		name string
		req  *evidencev1.ReadRequest
		want []string // substrings of the error; nil means valid
	}{
		{name: "valid", req: ok},
		{name: "max fields", req: &evidencev1.ReadRequest{TaskId: "t", Source: "s", RecordKey: "k", Fields: many[:evidence.MaxFields]}},
		{name: "nil request", req: nil, want: []string{"task_id", "source", "record_key", "fields"}},
		{name: "no task", req: &evidencev1.ReadRequest{Source: "s", RecordKey: "k", Fields: []string{"a"}}, want: []string{"task_id is required"}},
		{name: "no source", req: &evidencev1.ReadRequest{TaskId: "t", RecordKey: "k", Fields: []string{"a"}}, want: []string{"source is required"}},
		{name: "no key", req: &evidencev1.ReadRequest{TaskId: "t", Source: "s", Fields: []string{"a"}}, want: []string{"record_key is required"}},
		{name: "no fields", req: &evidencev1.ReadRequest{TaskId: "t", Source: "s", RecordKey: "k"}, want: []string{"at least one field"}},
		{name: "too many fields", req: &evidencev1.ReadRequest{TaskId: "t", Source: "s", RecordKey: "k", Fields: many}, want: []string{"65 requested, at most 64"}},
		{name: "repeated field", req: &evidencev1.ReadRequest{TaskId: "t", Source: "s", RecordKey: "k", Fields: []string{"a", "b", "a"}}, want: []string{`"a" is repeated`}},
		{name: "empty field", req: &evidencev1.ReadRequest{TaskId: "t", Source: "s", RecordKey: "k", Fields: []string{"a", ""}}, want: []string{"fields[1] is empty"}},
		{name: "every problem is named", req: &evidencev1.ReadRequest{Fields: []string{"a", "a"}}, want: []string{"task_id", "source", "record_key", `"a" is repeated`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := evidence.ValidateRead(tt.req)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateRead = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, evidence.ErrInvalidRequest) {
				t.Fatalf("ValidateRead = %v, want ErrInvalidRequest", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestContentHash(t *testing.T) {
	a := map[string]string{"receipt_total": "17.40", "receipt_date": "2026-03-02"}
	// Pinned (computed independently from the documented encoding):
	// receipts signed today must hash the same tomorrow.
	const golden = "407c883c3508fb645ad39d883dbc03c43a97a4944efa73f676a43392db8236ee"
	got := evidence.ContentHash(a)
	if got != evidence.ContentHash(map[string]string{"receipt_date": "2026-03-02", "receipt_total": "17.40"}) {
		t.Error("hash depends on map order")
	}
	tests := []struct {
		name string
		b    map[string]string
	}{
		{"value changed", map[string]string{"receipt_total": "17.41", "receipt_date": "2026-03-02"}},
		{"field moved into value", map[string]string{"receipt_total": "17.40receipt_date2026-03-02"}},
		{"boundary shifted", map[string]string{"receipt_total1": "7.40", "receipt_date": "2026-03-02"}},
		{"field dropped", map[string]string{"receipt_total": "17.40"}},
		{"empty", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if evidence.ContentHash(tt.b) == got {
				t.Errorf("ContentHash(%v) equals ContentHash(%v)", tt.b, a)
			}
		})
	}
	if got != golden {
		t.Errorf("ContentHash = %s, want %s", got, golden)
	}
}

func writeConfig(t *testing.T, body string) string {
	return servicetest.WriteFile(t, "evidence.yaml", body)
}

func TestLoadConfig(t *testing.T) {
	const full = `
identity: evidence
pki_dir: /tmp/pki
listen: 127.0.0.1:7101
addr_file: /tmp/evidence.addr
kernel: 127.0.0.1:7001
kernel_timeout: 2s
log_level: debug
shutdown_grace: 5s
reflection: true
sources:
  claims_db:
    kind: claims
    database: /tmp/claims.db
    provenance: PROVENANCE_TRUSTED
  receipt_store:
    kind: receipts
    database: /tmp/claims.db
    provenance: PROVENANCE_INSTRUCTION_BEARING
`
	got, err := evidence.LoadConfig(writeConfig(t, full))
	if err != nil {
		t.Fatal(err)
	}
	want := evidence.Config{
		Config: service.Config{
			Common: service.Common{Identity: "evidence", PKIDir: "/tmp/pki", AddrFile: "/tmp/evidence.addr", LogLevel: "debug", ShutdownGrace: config.Duration(5 * time.Second), Reflection: true, HealthInterval: config.Duration(service.DefaultHealthInterval), Tracing: service.TracingOff},
			Listen: "127.0.0.1:7101", Kernel: "127.0.0.1:7001", KernelTimeout: config.Duration(2 * time.Second),
		},
		Sources: map[string]evidence.SourceConfig{
			"claims_db":     {Kind: "claims", Database: "/tmp/claims.db", Provenance: "PROVENANCE_TRUSTED"},
			"receipt_store": {Kind: "receipts", Database: "/tmp/claims.db", Provenance: "PROVENANCE_INSTRUCTION_BEARING"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadConfig (-want +got):\n%s", diff)
	}

	minimal, err := evidence.LoadConfig(writeConfig(t, `
pki_dir: pki
kernel: 127.0.0.1:7001
sources: {claims_db: {kind: claims, database: c.db, provenance: PROVENANCE_TRUSTED}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if minimal.Identity != "evidence" || minimal.Listen != "127.0.0.1:0" ||
		minimal.KernelTimeout.D(0) != 3*time.Second || minimal.ShutdownGrace.D(0) != 10*time.Second {
		t.Errorf("defaults not applied: %+v", minimal)
	}

	bad := []struct {
		name, body string
		want       []string
	}{
		{"unknown key", "pki_dir: p\nkernel: k\nkernal_timeout: 3s\nsources: {a: {kind: claims, database: d, provenance: PROVENANCE_TRUSTED}}\n", []string{"kernal_timeout"}},
		{"missing required", "sources: {}\n", []string{"pki_dir", "kernel", "sources"}},
		{"bad source", "pki_dir: p\nkernel: k\nsources: {a: {kind: payroll, provenance: PROVENANCE_UNSPECIFIED}}\n",
			[]string{"sources.a.kind", "sources.a.database", "sources.a.provenance"}},
		{"bad duration", "pki_dir: p\nkernel: k\nkernel_timeout: soon\nsources: {a: {kind: claims, database: d, provenance: PROVENANCE_TRUSTED}}\n", []string{"soon"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := evidence.LoadConfig(writeConfig(t, tt.body))
			if err == nil {
				t.Fatal("LoadConfig succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
