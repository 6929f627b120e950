package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// drawChart draws packets per handoff against N, one line per lock, into
// path; the format follows its extension (.png, .svg, .pdf, ...). Without
// packet counts (no mntr) it draws requests per acquire instead.
func drawChart(path string, subjects []subject, all []figures, hold time.Duration) error {
	cost, unit := func(f figures) float64 { return f.packets }, "server packets per handoff (mntr, in + out)"
	for _, f := range all {
		if math.IsNaN(f.packets) {
			cost, unit = func(f figures) float64 { return f.requests }, "client requests per acquire"
			break
		}
	}

	// A sans-serif face (of the fonts gonum embeds) reads better on screen.
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	plot.DefaultFont, plotter.DefaultFont = sans, sans

	p := plot.New()
	p.Title.Text = fmt.Sprintf("Herd effect: ZooKeeper traffic per lock handoff\nN waiters queued, each holding the lock %v", hold)
	p.Title.Padding = vg.Points(8)
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = "waiters queued (N)"
	p.Y.Label.Text = unit
	p.X.Min, p.Y.Min = 0, 0
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil // the ticks mark the values of N
	p.Add(grid)

	var ticks []plot.Tick
	seen := map[int]bool{}
	for _, f := range all {
		if !seen[f.waiters] {
			seen[f.waiters] = true
			ticks = append(ticks, plot.Tick{Value: float64(f.waiters), Label: strconv.Itoa(f.waiters)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)

	var ends []endLabel
	for i, s := range subjects {
		var xys plotter.XYs
		for _, f := range all {
			if f.subject == s.name {
				xys = append(xys, plotter.XY{X: float64(f.waiters), Y: cost(f)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(2)
		line.Dashes = plotutil.Dashes(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		points.Radius = vg.Points(3.5)
		p.Add(line, points)
		p.Legend.Add(s.name+": "+s.legend, line, points)
		ends = append(ends, endLabel{i, s.name, xys[len(xys)-1]})
	}
	if err := addEndLabels(p, ends); err != nil {
		return err
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), vg.Points(-10)
	p.Y.Max *= 1.08 // room for the labels above the last points
	p.Y.Tick.Marker = plot.TickerFunc(roundTicks)
	p.X.Max *= 1.02 // and for the last points
	return save(p, path)
}

// save writes p to path, in the format of its extension; a PNG at 150 dpi.
func save(p *plot.Plot, path string) error {
	const w, h = 8 * vg.Inch, 5 * vg.Inch
	if strings.ToLower(filepath.Ext(path)) != ".png" {
		return p.Save(w, h, path)
	}
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(150))
	p.Draw(draw.New(c))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// endLabel is the value of one line at its largest N.
type endLabel struct {
	i    int // the line's index, for its colour
	name string
	at   plotter.XY
}

// addEndLabels writes each line's value at its largest N just above and to
// the left of the point; labels of lines ending close together (flat lines
// often do) are stacked instead of drawn over each other.
func addEndLabels(p *plot.Plot, ends []endLabel) error {
	slices.SortFunc(ends, func(a, b endLabel) int { return cmp.Compare(a.at.Y, b.at.Y) })
	top := 0.0
	for _, e := range ends {
		top = max(top, e.at.Y)
	}
	stack, prev := 0, math.Inf(-1)
	for _, e := range ends {
		if e.at.Y-prev < 0.06*top {
			stack++
		} else {
			stack = 0
		}
		prev = e.at.Y
		l, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{e.at},
			Labels: []string{fmt.Sprintf("%s %.1f", e.name, e.at.Y)},
		})
		if err != nil {
			return err
		}
		l.TextStyle[0].Color = plotutil.Color(e.i)
		l.TextStyle[0].XAlign = draw.XRight
		l.Offset = vg.Point{X: vg.Points(-8), Y: vg.Points(6 + 13*float64(stack))}
		p.Add(l)
	}
	return nil
}

// roundTicks marks round values (1, 2 or 5 times a power of ten apart)
// from lo to hi, at most seven of them.
func roundTicks(lo, hi float64) []plot.Tick {
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
