package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

const rowFormat = "%5s  %-10s %16s %17s %21s %12s %12s %8s\n"

func printHeader(out io.Writer) {
	fmt.Fprintf(out, rowFormat, "N", "lock", "packets/handoff", "requests/acquire", "watch events/acquire", "handoff p50", "handoff p99", "drain")
}

// printRow prints f; the first row of each N shows N.
func printRow(out io.Writer, f figures, first bool) {
	n := ""
	if first {
		n = fmt.Sprint(f.waiters)
	}
	fmt.Fprintf(out, rowFormat, n, f.subject, number(f.packets), number(f.requests), number(f.watches),
		duration(f.p50), duration(f.p99), f.elapsed.Round(10*time.Millisecond))
}

// printSummary says how each lock's cost per handoff grew from the smallest
// N to the largest, and how the first lock (the naive one) compares with
// the others at the largest N.
func printSummary(out io.Writer, subjects []subject, all []figures) {
	cost, unit := func(f figures) float64 { return f.packets }, "server packets per handoff"
	for _, f := range all {
		if math.IsNaN(f.packets) {
			cost, unit = func(f figures) float64 { return f.requests }, "client requests per acquire (the server did not answer mntr)"
			break
		}
	}
	first, last := map[string]figures{}, map[string]figures{}
	for _, f := range all {
		if _, ok := first[f.subject]; !ok {
			first[f.subject] = f
		}
		last[f.subject] = f
	}
	lo, hi := all[0].waiters, all[len(all)-1].waiters
	if lo == hi {
		return
	}
	fmt.Fprintf(out, "\nFrom N=%d to N=%d, %s:\n", lo, hi, unit)
	for _, s := range subjects {
		a, b := cost(first[s.name]), cost(last[s.name])
		fmt.Fprintf(out, "  %-10s %7.1f → %7.1f  (×%.1f)  %s\n", s.name, a, b, b/a, s.note)
	}
	naive := cost(last[subjects[0].name])
	var parts []string
	for _, s := range subjects[1:] {
		parts = append(parts, fmt.Sprintf("%.0f× what %s does", naive/cost(last[s.name]), s.name))
	}
	if len(parts) > 0 {
		fmt.Fprintf(out, "At N=%d, %s costs %s.\n", hi, subjects[0].name, strings.Join(parts, " and "))
	}
}

func number(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v)
}

// duration rounds d to three significant digits or so.
func duration(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Microsecond).String()
	}
}
