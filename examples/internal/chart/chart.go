// Package chart draws the examples' charts (examples/herd's traffic per
// handoff, examples/scalechart's cost per waiter) in one style with
// gonum/plot: a sans-serif face, a horizontal grid, one colour, dash
// pattern and point shape per series, values written by the last points.
// Plotting stays out of the library's module: only programs of examples/
// import it.
package chart

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// sans sets the face of style to a sans-serif one of the fonts gonum
// embeds (it reads better on screen than the default serif), keeping its
// size.
func sans(style *text.Style) {
	style.Font.Typeface, style.Font.Variant = "Liberation", "Sans"
}

// New returns an empty plot titled title (lines apart by "\n"), with a
// horizontal grid and the charts' face on every text.
func New(title string) *plot.Plot {
	p := plot.New()
	for _, s := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		sans(s)
	}
	p.Title.Text = title
	p.Title.Padding = vg.Points(8)
	p.Title.TextStyle.Font.Size = vg.Points(14)
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil // ticks mark the values of x
	p.Add(grid)
	return p
}

// Line adds series i of p: a line through xys with a mark on every point,
// in series i's colour, dashes and shape, and legend's entry when legend
// is not empty.
func Line(p *plot.Plot, i int, legend string, xys plotter.XYs) (*plotter.Line, *plotter.Scatter, error) {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	line.Color = plotutil.Color(i)
	line.Width = vg.Points(2)
	line.Dashes = plotutil.Dashes(i)
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	points.Radius = vg.Points(3.5)
	p.Add(line, points)
	if legend != "" {
		p.Legend.Add(legend, line, points)
	}
	return line, points, nil
}

// End is a text to write by a point of series I (in its colour): usually
// the series' value at its largest x.
type End struct {
	I    int
	Text string
	At   plotter.XY
}

// EndLabels writes each end's text just above and to the left of its
// point; texts of points close together (within 2% of the x axis and 6% of
// the y axis, on their scales: flat lines often end so) are stacked instead
// of drawn over each other. Call it once the series are added and the axes
// have their final ranges: it places the texts by them.
func EndLabels(p *plot.Plot, ends []End) error {
	x := func(e End) float64 { return p.X.Scale.Normalize(p.X.Min, p.X.Max, e.At.X) }
	y := func(e End) float64 { return p.Y.Scale.Normalize(p.Y.Min, p.Y.Max, e.At.Y) }
	ends = slices.Clone(ends)
	slices.SortFunc(ends, func(a, b End) int {
		return cmp.Or(cmp.Compare(a.At.X, b.At.X), cmp.Compare(a.At.Y, b.At.Y))
	})
	stack := 0
	for i, e := range ends {
		if i > 0 && x(e)-x(ends[i-1]) < 0.02 && y(e)-y(ends[i-1]) < 0.06 {
			stack++
		} else {
			stack = 0
		}
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{e.At}, Labels: []string{e.Text}})
		if err != nil {
			return err
		}
		sans(&l.TextStyle[0])
		l.TextStyle[0].Color = plotutil.Color(e.I)
		l.TextStyle[0].XAlign = draw.XRight
		l.Offset = vg.Point{X: vg.Points(-8), Y: vg.Points(6 + 13*float64(stack))}
		p.Add(l)
	}
	return nil
}

// RoundTicks marks round values (1, 2 or 5 times a power of ten apart)
// from lo to hi, at most seven of them: a plot.TickerFunc for a linear
// axis.
func RoundTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/7)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 7 {
			step *= m
			break
		}
	}
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi*(1+1e-9); i++ {
		ticks = append(ticks, plot.Tick{Value: i * step, Label: strconv.FormatFloat(i*step, 'f', decimals, 64)})
	}
	return ticks
}

// Save draws plots side by side, w by h in all, into path, in the format
// of its extension (.png, .svg, .pdf, ...); a PNG at 150 dpi. A caption
// that is not empty is written under them, centred.
func Save(path string, w, h vg.Length, caption string, plots ...*plot.Plot) error {
	if len(plots) == 0 {
		return fmt.Errorf("chart: nothing to draw into %s", path)
	}
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	var c vg.CanvasWriterTo
	if format == "png" {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(150))}
	} else {
		var err error
		if c, err = draw.NewFormattedCanvas(w, h, format); err != nil {
			return fmt.Errorf("chart: %s: %w", path, err)
		}
	}
	dc := draw.New(c)
	if caption != "" {
		style := plots[0].X.Label.TextStyle
		style.Font.Size = vg.Points(10)
		style.XAlign, style.YAlign = draw.XCenter, draw.YBottom
		pad := vg.Points(6)
		dc.FillText(style, vg.Point{X: w / 2, Y: pad}, caption)
		dc = draw.Crop(dc, 0, 0, style.Rectangle(caption).Size().Y+2*pad, 0)
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(24)}
	for i, p := range plots {
		p.Draw(tiles.At(dc, i, 0))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
