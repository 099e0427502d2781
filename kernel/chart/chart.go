package chart

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one named set of values, one per category of its panel.
type Series struct {
	Name   string
	Values []float64
}

// Panel is one grouped bar chart.
type Panel struct {
	Title      string
	YLabel     string
	Categories []string
	Series     []Series
}

// Panel sizes: wide enough for eight categories of five bars with their
// labels.
const (
	width       = 10 * vg.Inch
	panelHeight = 4 * vg.Inch
)

// SVG draws panels one above the other and returns the SVG document. A
// panel whose series do not have one value per category is an error.
func SVG(panels ...Panel) ([]byte, error) {
	if len(panels) == 0 {
		return nil, errors.New("chart: no panel")
	}
	plots := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		pl, err := bars(p)
		if err != nil {
			return nil, err
		}
		plots[i] = []*plot.Plot{pl}
	}
	canvas := vgsvg.New(width, panelHeight*vg.Length(len(panels)))
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 8,
		PadTop: vg.Millimeter * 4, PadBottom: vg.Millimeter * 4, PadLeft: vg.Millimeter * 4, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var out bytes.Buffer
	if _, err := canvas.WriteTo(&out); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	return out.Bytes(), nil
}

func bars(p Panel) (*plot.Plot, error) {
	if len(p.Categories) == 0 || len(p.Series) == 0 {
		return nil, fmt.Errorf("chart: panel %q has no data", p.Title)
	}
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.Y.Label.Text = p.YLabel
	pl.Add(plotter.NewGrid()) // first, so that the bars cover it
	// One unit per category, centred on it; headroom above the highest bar
	// keeps the legend clear of the bars.
	top := 1.0
	for _, s := range p.Series {
		for _, v := range s.Values {
			top = max(top, v)
		}
	}
	pl.X.Min, pl.X.Max = -0.5, float64(len(p.Categories))-0.5
	// The legend takes about 14 points a line of a data area about 230
	// points high.
	legend := min(0.6, (14*float64(len(p.Series))+16)/230)
	pl.Y.Min, pl.Y.Max = 0, top/(1-legend)
	pl.Y.Tick.Marker = plainTicks{}
	pl.Legend.Top = true
	// Swatches on the left: a viewer that substitutes a wider font pushes
	// the text away from them, not over them.
	pl.Legend.Left = true
	// The data area is about the canvas less an inch of axes; each group
	// keeps a gap of one bar.
	area := float64((width - vg.Inch).Points())
	w := vg.Points(area / float64(len(p.Categories)*(len(p.Series)+1)))
	for i, s := range p.Series {
		if len(s.Values) != len(p.Categories) {
			return nil, fmt.Errorf("chart: panel %q, series %q: %d values for %d categories", p.Title, s.Name, len(s.Values), len(p.Categories))
		}
		b, err := plotter.NewBarChart(plotter.Values(s.Values), w)
		if err != nil {
			return nil, fmt.Errorf("chart: panel %q, series %q: %w", p.Title, s.Name, err)
		}
		b.LineStyle.Width = vg.Length(0)
		b.Color = plotutil.Color(i)
		b.Offset = vg.Length(float64(i)-float64(len(p.Series)-1)/2) * w
		pl.Add(b)
		pl.Legend.Add(s.Name, b)
	}
	labels := make([]string, len(p.Categories))
	for i, c := range p.Categories {
		// Long labels go on two lines so that neighbours do not collide.
		if len(c) > 12 {
			c = strings.Replace(c, " ", "\n", 1)
		}
		labels[i] = c
	}
	pl.NominalX(labels...)
	return pl, nil
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("50", not "50.00").
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}
