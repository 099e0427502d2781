package evidence_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ambitkernel/ambit/adapters/claims"
	"github.com/ambitkernel/ambit/adapters/evidence"
	contractv1 "github.com/ambitkernel/ambit/proto/gen/ambit/contract/v1"
	evidencev1 "github.com/ambitkernel/ambit/proto/gen/ambit/evidence/v1"
	kernelv1 "github.com/ambitkernel/ambit/proto/gen/ambit/kernel/v1"
	receiptv1 "github.com/ambitkernel/ambit/proto/gen/ambit/receipt/v1"
	"github.com/ambitkernel/ambit/sdk/envelope"
	"github.com/ambitkernel/ambit/sdk/service"
)

// kernel is an in-test implementation of evidence.Kernel that records calls
// and answers with the configured errors.
type kernel struct {
	mu          sync.Mutex
	authorized  []*kernelv1.AuthorizeReadRequest
	recorded    []*receiptv1.Envelope
	authzErr    error
	recordErr   error
	provenance  contractv1.Provenance
	blockAuthz  bool
	blockRecord bool
}

var _ evidence.Kernel = (*kernel)(nil)

func (k *kernel) AuthorizeRead(ctx context.Context, in *kernelv1.AuthorizeReadRequest, _ ...grpc.CallOption) (*kernelv1.AuthorizeReadResponse, error) {
	k.mu.Lock()
	k.authorized = append(k.authorized, in)
	k.mu.Unlock()
	if k.blockAuthz {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if k.authzErr != nil {
		return nil, k.authzErr
	}
	return &kernelv1.AuthorizeReadResponse{Provenance: k.provenance}, nil
}

func (k *kernel) RecordEvidence(ctx context.Context, in *kernelv1.RecordEvidenceRequest, _ ...grpc.CallOption) (*kernelv1.RecordEvidenceResponse, error) {
	if k.blockRecord {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if k.recordErr != nil {
		return nil, k.recordErr
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.recorded = append(k.recorded, in.GetReceipt())
	return &kernelv1.RecordEvidenceResponse{}, nil
}

// countingConnector counts reads, to prove nothing is read before
// authorisation.
type countingConnector struct {
	claims.Connector
	mu    sync.Mutex
	reads int
}

func (c *countingConnector) Read(ctx context.Context, key string, fields []string) (claims.Record, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.Connector.Read(ctx, key, fields)
}

func seededDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := claims.Open(filepath.Join(t.TempDir(), "claims.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	if err := claims.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := claims.Seed(ctx, db, claims.DemoData()); err != nil {
		t.Fatal(err)
	}
	return db
}

var readAt = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

type fixture struct {
	core    *evidence.Core
	kernel  *kernel
	conns   map[string]*countingConnector
	pub     ed25519.PublicKey
	logs    *observer.ObservedLogs
	handler *evidence.Handler
}

func newFixture(t *testing.T, k *kernel) *fixture {
	t.Helper()
	db := seededDB(t)
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := map[string]*countingConnector{}
	sources := map[string]evidence.Source{}
	for name, src := range map[string]struct {
		kind claims.Kind
		prov contractv1.Provenance
	}{
		"claims_db":     {claims.KindClaims, contractv1.Provenance_PROVENANCE_TRUSTED},
		"receipt_store": {claims.KindReceipts, contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING},
	} {
		c, err := claims.NewConnector(db, src.kind)
		if err != nil {
			t.Fatal(err)
		}
		conns[name] = &countingConnector{Connector: c}
		sources[name] = evidence.Source{Connector: conns[name], Provenance: src.prov}
	}
	core, logs := observer.New(zap.DebugLevel)
	ids := 0
	c, err := evidence.NewCore(evidence.Deps{
		Issuer: service.Issuer{
			Identity: "evidence",
			Signer:   envelope.NewSigner("evidence", priv),
			Now:      func() time.Time { return readAt },
			NewID: func() string {
				ids++
				return strings.Repeat("0", 31) + string(rune('0'+ids))
			},
			Log: zap.New(core),
		},
		Kernel:        k,
		KernelTimeout: 200 * time.Millisecond,
		Sources:       sources,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{core: c, kernel: k, conns: conns, pub: pub, logs: logs, handler: evidence.NewHandler(c)}
}

func (f *fixture) reads() int {
	n := 0
	for _, c := range f.conns {
		c.mu.Lock()
		n += c.reads
		c.mu.Unlock()
	}
	return n
}

func TestReadReleasesOnlyGrantedFieldsWithSignedReceipt(t *testing.T) {
	k := &kernel{provenance: contractv1.Provenance_PROVENANCE_TRUSTED}
	f := newFixture(t, k)
	req := &evidencev1.ReadRequest{
		TaskId: "refund-claim-1001", Source: "claims_db", RecordKey: claims.DemoClaim1001,
		Fields: []string{"receipt_total", "claimant_id", "receipt_date"},
	}
	resp, err := f.handler.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	wantValues := map[string]string{"receipt_total": "17.40", "claimant_id": "employee-7", "receipt_date": "2026-03-02"}
	if diff := cmp.Diff(wantValues, resp.GetValues()); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	want := &receiptv1.EvidenceReceipt{
		ReceiptId:    "ev-00000000000000000000000000000001",
		TaskId:       "refund-claim-1001",
		Source:       "claims_db",
		RecordKey:    "C-1001",
		Fields:       []string{"claimant_id", "receipt_date", "receipt_total"},
		StateVersion: "claims-v42",
		Subject:      "employee-7",
		ReadAt:       timestamppb.New(readAt),
		ContentHash:  evidence.ContentHash(wantValues),
		Provenance:   contractv1.Provenance_PROVENANCE_TRUSTED,
		Issuer:       "evidence",
	}
	if diff := cmp.Diff(want, resp.GetReceipt(), protocmp.Transform()); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	var opened receiptv1.EvidenceReceipt
	if err := (envelope.Keyring{"evidence": f.pub}).Open(resp.GetSignedReceipt(), "evidence", &opened); err != nil {
		t.Fatalf("signed receipt does not verify: %v", err)
	}
	if diff := cmp.Diff(want, &opened, protocmp.Transform()); diff != "" {
		t.Errorf("signed receipt payload (-want +got):\n%s", diff)
	}
	// The kernel authorised exactly the request (fields sorted) and logged
	// exactly the envelope returned.
	wantAuthz := []*kernelv1.AuthorizeReadRequest{{
		TaskId: "refund-claim-1001", Source: "claims_db", RecordKey: "C-1001",
		Fields: []string{"claimant_id", "receipt_date", "receipt_total"},
	}}
	if diff := cmp.Diff(wantAuthz, k.authorized, protocmp.Transform()); diff != "" {
		t.Errorf("AuthorizeRead calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*receiptv1.Envelope{resp.GetSignedReceipt()}, k.recorded, protocmp.Transform()); diff != "" {
		t.Errorf("RecordEvidence calls (-want +got):\n%s", diff)
	}
}

func TestReadProvenanceIsTheStricter(t *testing.T) {
	tests := []struct {
		name   string
		source string
		key    string
		kernel contractv1.Provenance
		want   contractv1.Provenance
	}{
		{"kernel stricter than config", "claims_db", claims.DemoClaim1001, contractv1.Provenance_PROVENANCE_UNTRUSTED, contractv1.Provenance_PROVENANCE_UNTRUSTED},
		{"config stricter than kernel", "receipt_store", claims.DemoReceipt2002, contractv1.Provenance_PROVENANCE_TRUSTED, contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING},
		{"kernel unspecified", "claims_db", claims.DemoClaim1001, contractv1.Provenance_PROVENANCE_UNSPECIFIED, contractv1.Provenance_PROVENANCE_TRUSTED},
		{"kernel value unknown to this build", "claims_db", claims.DemoClaim1001, contractv1.Provenance(9), contractv1.Provenance_PROVENANCE_INSTRUCTION_BEARING},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &kernel{provenance: tt.kernel})
			resp, err := f.handler.Read(context.Background(), &evidencev1.ReadRequest{
				TaskId: "t", Source: tt.source, RecordKey: tt.key, Fields: []string{"claim_id"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetReceipt().GetProvenance(); got != tt.want {
				t.Errorf("provenance = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReadFailures(t *testing.T) {
	denied := status.Error(codes.PermissionDenied, `field "medical_notes" is outside the evidence grant`)
	tests := []struct {
		name      string
		kernel    *kernel
		req       *evidencev1.ReadRequest
		code      codes.Code
		msg       string // exact, when set
		contains  string
		wantReads int
		recorded  int
	}{
		{
			name:   "kernel unavailable: nothing is read",
			kernel: &kernel{authzErr: status.Error(codes.Unavailable, "connection refused")},
			code:   codes.Unavailable, msg: "kernel unreachable: nothing was read",
		},
		{
			name:   "kernel too slow: nothing is read",
			kernel: &kernel{blockAuthz: true},
			code:   codes.Unavailable, msg: "kernel unreachable: nothing was read",
		},
		{
			name:   "kernel internal error fails closed",
			kernel: &kernel{authzErr: status.Error(codes.Internal, "boom")},
			code:   codes.Unavailable, msg: "kernel unreachable: nothing was read",
		},
		{
			name:   "kernel refusal passes through unchanged",
			kernel: &kernel{authzErr: denied},
			code:   codes.PermissionDenied, msg: `field "medical_notes" is outside the evidence grant`,
		},
		{
			name:   "kernel failed precondition passes through",
			kernel: &kernel{authzErr: status.Error(codes.FailedPrecondition, "contract is not canonical")},
			code:   codes.FailedPrecondition, msg: "contract is not canonical",
		},
		{
			name:   "kernel not found passes through",
			kernel: &kernel{authzErr: status.Error(codes.NotFound, `task "t" not found`)},
			code:   codes.NotFound, msg: `task "t" not found`,
		},
		{
			name:   "source unknown to the adapter after authorisation",
			kernel: &kernel{},
			req:    &evidencev1.ReadRequest{TaskId: "t", Source: "hr_db", RecordKey: "C-1001", Fields: []string{"salary"}},
			code:   codes.NotFound, contains: `"hr_db"`,
		},
		{
			name:   "field unknown to the source",
			kernel: &kernel{},
			req:    &evidencev1.ReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-1001", Fields: []string{"shoe_size"}},
			code:   codes.InvalidArgument, contains: `"shoe_size"`, wantReads: 1,
		},
		{
			name:   "missing record",
			kernel: &kernel{},
			req:    &evidencev1.ReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-0000", Fields: []string{"receipt_total"}},
			code:   codes.NotFound, contains: `"C-0000"`, wantReads: 1,
		},
		{
			name:   "receipt not recorded: nothing released",
			kernel: &kernel{recordErr: status.Error(codes.Unavailable, "connection reset")},
			code:   codes.Unavailable, msg: "kernel unreachable: the read was not recorded and nothing was released", wantReads: 1,
		},
		{
			name:   "recording too slow: nothing released",
			kernel: &kernel{blockRecord: true},
			code:   codes.Unavailable, msg: "kernel unreachable: the read was not recorded and nothing was released", wantReads: 1,
		},
		{
			name:   "kernel refuses the receipt (other subject)",
			kernel: &kernel{recordErr: status.Error(codes.PermissionDenied, "record subject employee-9 is not the task's subject employee-7")},
			code:   codes.PermissionDenied, msg: "record subject employee-9 is not the task's subject employee-7", wantReads: 1,
		},
		{
			name:   "kernel refuses the receipt (state changed)",
			kernel: &kernel{recordErr: status.Error(codes.FailedPrecondition, "state changed")},
			code:   codes.FailedPrecondition, msg: "state changed", wantReads: 1,
		},
		{
			name:   "invalid request is refused before the kernel",
			kernel: &kernel{},
			req:    &evidencev1.ReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-1001"},
			code:   codes.InvalidArgument, contains: "fields",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.kernel)
			req := tt.req
			if req == nil {
				req = &evidencev1.ReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-1001", Fields: []string{"receipt_total"}}
			}
			resp, err := f.handler.Read(context.Background(), req)
			if resp != nil {
				t.Errorf("Read returned %v with error %v; want nothing released", resp, err)
			}
			st := status.Convert(err)
			if st.Code() != tt.code {
				t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), tt.code)
			}
			if tt.msg != "" && st.Message() != tt.msg {
				t.Errorf("message = %q, want %q", st.Message(), tt.msg)
			}
			if !strings.Contains(st.Message(), tt.contains) {
				t.Errorf("message = %q, want it to contain %q", st.Message(), tt.contains)
			}
			if got := f.reads(); got != tt.wantReads {
				t.Errorf("%d connector reads, want %d", got, tt.wantReads)
			}
			if len(tt.kernel.recorded) != 0 {
				t.Errorf("%d receipts recorded, want 0", len(tt.kernel.recorded))
			}
		})
	}
}

func TestReadCallerCancelled(t *testing.T) {
	f := newFixture(t, &kernel{blockAuthz: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.core.Read(ctx, "agent", &evidencev1.ReadRequest{TaskId: "t", Source: "claims_db", RecordKey: "C-1001", Fields: []string{"receipt_total"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled caller = %v, want context.Canceled", err)
	}
}

// TestLogsNeverCarryValues reads every sensitive column and checks that no
// value appears in any log line, on success or refusal.
func TestLogsNeverCarryValues(t *testing.T) {
	sensitive := []string{"salary", "medical_notes", "bank_account", "disciplinary_notes"}
	for _, k := range []*kernel{{}, {recordErr: status.Error(codes.Unavailable, "down")}} {
		f := newFixture(t, k)
		resp, _ := f.handler.Read(context.Background(), &evidencev1.ReadRequest{
			TaskId: "t", Source: "claims_db", RecordKey: claims.DemoClaim1001, Fields: sensitive,
		})
		if k.recordErr == nil && len(resp.GetValues()) != len(sensitive) {
			t.Fatalf("values = %v", resp.GetValues())
		}
		entries := f.logs.All()
		if len(entries) != 1 {
			t.Errorf("%d log lines for one read, want 1", len(entries))
		}
		var demo claims.Claim
		for _, c := range claims.DemoData().Claims {
			if c.ClaimID == claims.DemoClaim1001 {
				demo = c
			}
		}
		for _, e := range entries {
			line := e.Message + " " + strings.Join(flatten(e.ContextMap()), " ")
			for _, v := range []string{demo.Salary, demo.MedicalNotes, demo.BankAccount, demo.DisciplinaryNotes} {
				if strings.Contains(line, v) {
					t.Errorf("log line %q carries the value %q", line, v)
				}
			}
		}
	}
}

func flatten(m map[string]any) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%v", k, v))
	}
	return out
}

func TestNewCoreRefusesMissingDeps(t *testing.T) {
	if _, err := evidence.NewCore(evidence.Deps{}); err == nil {
		t.Error("NewCore(empty deps) succeeded")
	}
}
