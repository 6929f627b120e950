package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/zkrecipes/zkrecipes/examples/internal/chart"
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

	p := chart.New(fmt.Sprintf("Herd effect: ZooKeeper traffic per lock handoff\nN waiters queued, each holding the lock %v", hold))
	p.X.Label.Text = "waiters queued (N)"
	p.Y.Label.Text = unit
	p.X.Min, p.Y.Min = 0, 0

	var ticks []plot.Tick
	seen := map[int]bool{}
	for _, f := range all {
		if !seen[f.waiters] {
			seen[f.waiters] = true
			ticks = append(ticks, plot.Tick{Value: float64(f.waiters), Label: strconv.Itoa(f.waiters)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)

	var ends []chart.End
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
		if _, _, err := chart.Line(p, i, s.name+": "+s.legend, xys); err != nil {
			return err
		}
		last := xys[len(xys)-1]
		ends = append(ends, chart.End{I: i, Text: fmt.Sprintf("%s %.1f", s.name, last.Y), At: last})
	}
	p.Y.Max *= 1.08 // room for the labels above the last points
	p.X.Max *= 1.02 // and for the last points
	if err := chart.EndLabels(p, ends); err != nil {
		return err
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), vg.Points(-10)
	p.Y.Tick.Marker = plot.TickerFunc(chart.RoundTicks)
	return chart.Save(path, 8*vg.Inch, 5*vg.Inch, "", p)
}
