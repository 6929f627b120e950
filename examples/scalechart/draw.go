package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/zkrecipes/zkrecipes/examples/internal/chart"
)

// The series' indexes: their colours, dashes and shapes in both panels.
const (
	seriesBefore = iota
	seriesAfter
	seriesAfterStacks
	seriesCurator
)

// draw writes the two panels of r side by side into path.
func draw(path string, r run) error {
	mem := panel("Memory per waiter", r.header, "bytes per waiter")
	queue := panel("Time until all N waiters are queued", r.header, "seconds")
	mem.Y.Tick.Marker = decades(bytesLabel)
	queue.Y.Tick.Marker = decades(secondsLabel)

	// A Curator point stopped at the cap while its threads queued is
	// marked *: its memory is that of the nodes queued by then, and its
	// time a lower bound (≥). The caption says where each stop was.
	star := func(p point) string {
		if p.stopped == "queueing" {
			return "*"
		}
		return ""
	}
	atLeast := func(p point) string {
		if p.stopped == "queueing" {
			return "≥ "
		}
		return ""
	}
	// nLabel names an N that has no label on the x axis.
	nLabel := func(p point) string {
		if e := math.Log10(float64(p.n)); e != math.Trunc(e) {
			return " at " + thousands(p.n)
		}
		return ""
	}
	type series struct {
		i      int
		legend string
		points []point
		value  func(point) float64
		label  func(point) string
	}
	memSeries := []series{
		{seriesBefore, "zkrecipes before the fix: heap (recorded then)", before,
			func(p point) float64 { return p.memory }, func(p point) string { return bytesLabel(p.memory) + nLabel(p) }},
		{seriesAfter, "zkrecipes after: heap (this run)", r.after,
			func(p point) float64 { return p.memory }, func(p point) string { return bytesLabel(p.memory) }},
		{seriesAfterStacks, "zkrecipes after: heap + goroutine stacks (this run)", r.after,
			func(p point) float64 { return p.heapStack }, func(p point) string { return bytesLabel(p.heapStack) }},
		{seriesCurator, "Curator 5.4, N threads: JVM RSS growth (this run)", r.curator,
			func(p point) float64 { return p.memory }, func(p point) string { return bytesLabel(p.memory) + star(p) }},
	}
	queueSeries := []series{
		{seriesBefore, "zkrecipes before the fix (recorded then)", before,
			func(p point) float64 { return p.queueS }, func(p point) string { return secondsLabel(p.queueS) + nLabel(p) }},
		{seriesAfter, "zkrecipes after (this run)", r.after,
			func(p point) float64 { return p.queueS }, func(p point) string { return secondsLabel(p.queueS) }},
		{seriesCurator, "Curator 5.4, N threads (this run)", r.curator,
			func(p point) float64 { return p.queueS }, func(p point) string { return atLeast(p) + secondsLabel(p.queueS) + star(p) }},
	}
	var stops []string
	starred := ""
	for _, p := range r.curator {
		if p.stopped == "" {
			continue
		}
		what := fmt.Sprintf("%s of %s nodes queued", thousands(p.queued), thousands(p.n))
		if p.stopped == "draining" {
			what = fmt.Sprintf("all queued, %s of %s acquisitions done", thousands(p.drained), thousands(p.n))
		}
		stops = append(stops, fmt.Sprintf("N = %s after %.0f s, while %s (%s)", thousands(p.n), p.capS, p.stopped, what))
		if star(p) != "" {
			starred = " * stopped before all N were queued."
		}
	}
	caption := ""
	if len(stops) > 0 {
		caption = fmt.Sprintf("Curator was stopped at its cap: %s.%s", strings.Join(stops, "; "), starred)
	}

	// The x axis: every N, the powers of ten labelled.
	var ns []int
	for _, p := range slices.Concat(before, r.after, r.curator) {
		ns = append(ns, p.n)
	}
	slices.Sort(ns)
	ns = slices.Compact(ns)
	var ticks []plot.Tick
	for _, n := range ns {
		t := plot.Tick{Value: float64(n)}
		if e := math.Log10(float64(n)); e == math.Trunc(e) {
			t.Label = thousands(n) // others (2,000) only marked: their points' labels say their N
		}
		ticks = append(ticks, t)
	}

	for _, pp := range []struct {
		p  *plot.Plot
		ss []series
	}{{mem, memSeries}, {queue, queueSeries}} {
		pp.p.X.Tick.Marker = plot.ConstantTicks(ticks)
		pp.p.X.Min, pp.p.X.Max = float64(ns[0])/2.5, float64(ns[len(ns)-1])*1.5
		var ends []chart.End
		for _, s := range pp.ss {
			var xys plotter.XYs
			for _, p := range s.points {
				if v := s.value(p); v > 0 { // a log axis has no room for 0
					xys = append(xys, plotter.XY{X: float64(p.n), Y: v})
					ends = append(ends, chart.End{I: s.i, Text: s.label(p), At: xys[len(xys)-1]})
				}
			}
			if len(xys) == 0 {
				continue
			}
			if _, _, err := chart.Line(pp.p, s.i, s.legend, xys); err != nil {
				return err
			}
		}
		pp.p.Y.Min /= 3
		pp.p.Y.Max *= 40 // room for the legend above the lines
		if err := chart.EndLabels(pp.p, ends); err != nil {
			return err
		}
	}
	return chart.Save(path, 13*vg.Inch, 6*vg.Inch, caption, mem, queue)
}

// panel is one log–log panel against N.
func panel(title, header, unit string) *plot.Plot {
	if run := runTitle(header); run != "" {
		title += "\n" + run
	}
	p := chart.New(title)
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = "waiters queued on one mutex (N)"
	p.Y.Label.Text = unit + " (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), vg.Points(-6)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p
}

// runTitle is the part of bench-scale.sh's header a reader needs to weigh
// the figures: when, the machine's cores and load, the commit.
func runTitle(header string) string {
	if header == "" {
		return ""
	}
	parts := strings.Split(header, "; ")
	t := "bench-scale.sh " + parts[0]
	for _, p := range parts[1:] {
		if strings.HasPrefix(p, "commit ") {
			t += ", " + p
		}
	}
	return t
}

// decades marks the powers of ten from lo to hi with labels, and 2 to 9
// times them without.
func decades(label func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			for m := 1.0; m < 10; m++ {
				v := m * math.Pow(10, e)
				if v < lo || v > hi {
					continue
				}
				t := plot.Tick{Value: v}
				if m == 1 {
					t.Label = label(v)
				}
				ticks = append(ticks, t)
			}
		}
		return ticks
	})
}

// bytesLabel writes b bytes in decimal units, with two significant digits.
func bytesLabel(b float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}} {
		if b >= u.div {
			return sig(b/u.div) + " " + u.name
		}
	}
	return sig(b) + " B"
}

// secondsLabel writes s seconds with two significant digits.
func secondsLabel(s float64) string { return sig(s) + " s" }

// sig writes v with two significant digits (all digits of its integer
// part), without trailing zeros.
func sig(v float64) string {
	if v <= 0 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	d := max(0, 1-int(math.Floor(math.Log10(v))))
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
