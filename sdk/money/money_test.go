package money

import (
	"errors"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name  string
		code  string
		minor int64
		want  string
	}{
		{"pence", "GBP", 1740, "GBP 17.40"},
		{"small", "GBP", 5, "GBP 0.05"},
		{"no minor unit", "JPY", 500, "JPY 500"},
		{"three digits", "KWD", 1234, "KWD 1.234"},
		{"negative", "EUR", -150, "EUR -1.50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Format(New(tt.code, tt.minor)); got != tt.want {
				t.Errorf("Format = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		code     string
		minor    int64
		positive bool
		wantErr  bool
	}{
		{"ok", "GBP", 1, true, false},
		{"zero allowed for limits", "GBP", 0, false, false},
		{"zero refused for proposals", "GBP", 0, true, true},
		{"negative", "GBP", -1, false, true},
		{"lower case", "gbp", 1, false, true},
		{"unknown code", "XYZ", 1, false, true},
		{"empty code", "", 1, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := Check
			if tt.positive {
				check = CheckPositive
			}
			err := check(New(tt.code, tt.minor))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("err %v does not wrap ErrInvalid", err)
			}
		})
	}
	if err := Check(nil); err == nil {
		t.Error("Check(nil) = nil, want error")
	}
}
