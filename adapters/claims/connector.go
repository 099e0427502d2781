package claims

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of a [Connector], matched with errors.Is. Their messages name the
// field or key and are safe to show to the caller.
var (
	// ErrUnknownField means a requested field is not a column of the source.
	ErrUnknownField = errors.New("unknown field")
	// ErrNotFound means no record has the requested key.
	ErrNotFound = errors.New("record not found")
	// ErrNoFields means a read asked for no fields at all.
	ErrNoFields = errors.New("no fields requested")
)

// Record is what one read of one record returns.
type Record struct {
	// Values holds exactly the requested fields.
	Values map[string]string
	// StateVersion is the record's version, e.g. "claims-v42".
	StateVersion string
	// Subject is the data subject the record belongs to, e.g. "employee-7".
	Subject string
}

// Connector reads projected records from one source.
type Connector interface {
	// Read returns the named fields of the record with key. An unknown
	// field is [ErrUnknownField], naming it; a missing key is [ErrNotFound].
	Read(ctx context.Context, key string, fields []string) (Record, error)
}

// Kind is the kind of a source table.
type Kind string

// The source kinds. A kind is also the prefix of its rows' state versions.
const (
	KindClaims   Kind = "claims"
	KindReceipts Kind = "receipts"
)

// Valid reports whether k is one of the kinds above.
func (k Kind) Valid() bool {
	_, ok := tableOf(k)
	return ok
}

// StateVersion is the state version of a row of kind k at row_version v,
// e.g. "claims-v42".
func StateVersion(k Kind, v int64) string {
	return fmt.Sprintf("%s-v%d", k, v)
}

// Version returns the state version the row of kind k with key has now,
// e.g. "claims-v43". A missing row is [ErrNotFound]. It reads the version
// only, never a field.
func Version(ctx context.Context, db *sql.DB, k Kind, key string) (string, error) {
	t, ok := tableOf(k)
	if !ok {
		return "", fmt.Errorf("version: unknown source kind %q", k)
	}
	var v int64
	err := db.QueryRowContext(ctx, `SELECT "row_version" FROM "`+t.name+`" WHERE "`+t.key+`" = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w: %s %q", ErrNotFound, k, key)
	}
	if err != nil {
		return "", fmt.Errorf("read version of %s %q: %w", k, key, err)
	}
	return StateVersion(k, v), nil
}

// table describes one source table. The subject and version columns are
// read with every record, but only requested fields are returned.
type table struct {
	name    string
	key     string
	subject string
	// fields are the readable columns (every column except row_version).
	fields []string
}

// tableOf describes the table of kind k. A switch rather than a package
// map, so there is no global anyone could modify.
func tableOf(k Kind) (table, bool) {
	switch k {
	case KindClaims:
		return table{
			name:    "claims",
			key:     "claim_id",
			subject: "claimant_id",
			fields: []string{"claim_id", "claimant_id", "receipt_total", "receipt_date", "cost_centre",
				"salary", "medical_notes", "bank_account", "disciplinary_notes"},
		}, true
	case KindReceipts:
		return table{
			name:    "receipts",
			key:     "receipt_id",
			subject: "claimant_id",
			fields:  []string{"receipt_id", "claim_id", "claimant_id", "receipt_total", "receipt_date", "receipt_text"},
		}, true
	}
	return table{}, false
}

// Fields returns the readable fields of kind k (nil for an unknown kind).
func Fields(k Kind) []string {
	t, _ := tableOf(k)
	return t.fields
}

// Table is the [Connector] of one source table.
type Table struct {
	db   *sql.DB
	kind Kind
	t    table
}

var _ Connector = (*Table)(nil)

// NewConnector returns the connector reading kind k from db.
func NewConnector(db *sql.DB, k Kind) (*Table, error) {
	t, ok := tableOf(k)
	if !ok {
		return nil, fmt.Errorf("new connector: unknown source kind %q (want %s or %s)", k, KindClaims, KindReceipts)
	}
	if db == nil {
		return nil, errors.New("new connector: nil database")
	}
	return &Table{db: db, kind: k, t: t}, nil
}

// Kind is the kind of table the connector reads.
func (c *Table) Kind() Kind { return c.kind }

// Check proves the table is readable with every known column, so that a
// missing or wrong database fails at start-up rather than on the first read.
func (c *Table) Check(ctx context.Context) error {
	q := "SELECT " + columnList(c.t.fields) + `, "row_version" FROM "` + c.t.name + `" LIMIT 0`
	rows, err := c.db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("check %s table: %w", c.kind, err)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("check %s table: %w", c.kind, err)
	}
	return nil
}

// Read implements [Connector]. It selects only the requested columns plus
// the subject and row version; column names come from the known list, never
// from the request, so a field name cannot inject SQL.
func (c *Table) Read(ctx context.Context, key string, fields []string) (Record, error) {
	if len(fields) == 0 {
		return Record{}, fmt.Errorf("read %s %q: %w", c.kind, key, ErrNoFields)
	}
	var unknown []string
	for _, f := range fields {
		if !slices.Contains(c.t.fields, f) {
			unknown = append(unknown, fmt.Sprintf("%q", f))
		}
	}
	if len(unknown) > 0 {
		// Every unknown field is named, not just the first.
		return Record{}, fmt.Errorf("%w %s in source kind %s", ErrUnknownField, strings.Join(unknown, ", "), c.kind)
	}
	q := "SELECT " + columnList(fields) + `, "` + c.t.subject + `", "row_version" FROM "` + c.t.name +
		`" WHERE "` + c.t.key + `" = ?`
	vals := make([]string, len(fields))
	var subject string
	var version int64
	dest := make([]any, 0, len(fields)+2)
	for i := range vals {
		dest = append(dest, &vals[i])
	}
	dest = append(dest, &subject, &version)
	err := c.db.QueryRowContext(ctx, q, key).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("%w: %s %q", ErrNotFound, c.kind, key)
	}
	if err != nil {
		return Record{}, fmt.Errorf("read %s %q: %w", c.kind, key, err)
	}
	rec := Record{
		Values:       make(map[string]string, len(fields)),
		StateVersion: StateVersion(c.kind, version),
		Subject:      subject,
	}
	for i, f := range fields {
		rec.Values[f] = vals[i]
	}
	return rec, nil
}

// columnList quotes names that have already been checked against a table's
// known columns.
func columnList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = `"` + n + `"`
	}
	return strings.Join(quoted, ", ")
}
