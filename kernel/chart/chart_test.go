package chart_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/ambitkernel/ambit/kernel/chart"
)

func panels() []chart.Panel {
	return []chart.Panel{
		{Title: "Measures per profile", YLabel: "episodes", Categories: []string{"unrestricted", "coupled"},
			Series: []chart.Series{{Name: "unsafe effects", Values: []float64{50, 0}}, {Name: "review load", Values: []float64{0, 30}}}},
		{Title: "Routes per family", YLabel: "routes", Categories: []string{"provenance", "cumulative amount"},
			Series: []chart.Series{{Name: "coupled", Values: []float64{6, 0}}}},
	}
}

func TestSVG(t *testing.T) {
	first, err := chart.SVG(panels()...)
	if err != nil {
		t.Fatal(err)
	}
	again, err := chart.SVG(panels()...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Error("the same data drew different bytes")
	}
	// Well-formed XML whose root is an svg element, with every title and
	// label drawn as text.
	dec := xml.NewDecoder(bytes.NewReader(first))
	var root string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	for _, want := range []string{"Measures per profile", "Routes per family", "unsafe effects", "review load", "unrestricted", "provenance", "episodes"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the chart does not show %q", want)
		}
	}
}

func TestSVGErrors(t *testing.T) {
	tests := []struct {
		name   string
		panels []chart.Panel
		want   string
	}{
		{"no panel", nil, "no panel"},
		{"no data", []chart.Panel{{Title: "empty"}}, "no data"},
		{"values do not match categories", []chart.Panel{{Title: "p", Categories: []string{"a", "b"},
			Series: []chart.Series{{Name: "s", Values: []float64{1}}}}}, "1 values for 2 categories"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chart.SVG(tt.panels...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
