// Command scalechart draws the chart of docs/benchmarks.md's "Scale"
// section from the lines of scripts/bench-scale.sh: N waiters of one
// process queued on one mutex that another session holds, against N, on
// log–log axes, in two panels: memory per waiter, and the time until all N
// are queued. Its series:
//
//   - zkrecipes before the fix (when the queue kept a listing per waiter):
//     the figures recorded before it (heap growth per waiter: 238 KB at 2,000 and
//     861 KB at 10,000; 4.8 s and 79 s to queue them), not measured by the
//     run;
//   - zkrecipes after, from the run's mutex lines: heap per waiter (the
//     same measure as before), and heap plus goroutine stacks;
//   - Apache Curator 5.4, from the run's curator lines: N threads of one
//     JVM on one InterProcessMutex, the growth of the JVM's RSS per thread;
//     a point where the run stopped Curator at its cap says so, and its
//     time is the time to the stop (a lower bound when it stopped queueing).
//
// Usage:
//
//	scripts/bench-scale.sh 100,1000,10000 mutex,held,curator | tee scale.txt
//	go run ./examples/scalechart -in scale.txt -out docs/scale.svg
//
// (SCALE_CHART=docs/scale.svg scripts/bench-scale.sh ... does both.) The
// run's header line (its date and the machine's load) titles the chart.
// The format follows -out's extension: .svg, .png or .pdf.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "-", "bench-scale.sh's output; - for stdin")
	out := flag.String("out", "scale.svg", "the chart (.svg, .png or .pdf)")
	flag.Parse()
	r := io.Reader(os.Stdin)
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		r = f
	}
	run, err := parse(r)
	if err != nil {
		log.Fatalf("scalechart: %v", err)
	}
	if err := draw(*out, run); err != nil {
		log.Fatalf("scalechart: %v", err)
	}
	fmt.Printf("chart: %s\n", *out)
}

// point is one N of a series.
type point struct {
	n         int
	memory    float64 // bytes per waiter
	queueS    float64 // seconds until all n were queued, or until the stop
	stopped   string  // where Curator was stopped at its cap; "" if it was not
	queued    int     // lock nodes queued when it was stopped
	drained   int     // acquisitions done when it was stopped
	capS      float64 // when it was stopped
	heapStack float64 // zkrecipes: heap and goroutine stacks per waiter
}

// run is what one bench-scale.sh run says of the mutex.
type run struct {
	header  string  // the run's "# ..." line, without "# "
	after   []point // zkrecipes' mutex lines
	curator []point // Curator's lines
}

// before is the table recorded before the fix: live heap growth per
// waiter and the time to queue them all, one session, default options.
var before = []point{
	{n: 2000, memory: 238e3, queueS: 4.8},
	{n: 10000, memory: 861e3, queueS: 79},
}

// parse reads bench-scale.sh's lines: the header and the mutex's and
// Curator's lines; the others (other recipes, held locks) are skipped.
func parse(r io.Reader) (run, error) {
	var res run
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if h, ok := strings.CutPrefix(line, "# "); ok && res.header == "" {
			res.header = h
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "scale" || (f[0] != "zkrecipes" && f[0] != "curator") {
			continue
		}
		kv := map[string]string{}
		for _, x := range f[2:] {
			if k, v, ok := strings.Cut(x, "="); ok {
				kv[k] = v
			}
		}
		if kv["recipe"] != "mutex" {
			continue
		}
		var p point
		var errs []error
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(kv[k], 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
			}
			return v
		}
		p.n = int(num("n"))
		p.queueS = num("queue_s")
		if f[0] == "zkrecipes" {
			p.memory = num("heap_per_waiter_b")
			p.heapStack = p.memory + num("stack_per_waiter_b")
		} else {
			p.memory = num("rss_per_waiter_b")
			if s := kv["stopped"]; s != "none" {
				p.stopped, p.queued, p.drained, p.capS = s, int(num("queued")), int(num("drained")), num("secs")
			}
		}
		if err := errors.Join(errs...); err != nil {
			return run{}, fmt.Errorf("line %q: %w", line, err)
		}
		if f[0] == "zkrecipes" {
			res.after = append(res.after, p)
		} else {
			res.curator = append(res.curator, p)
		}
	}
	if err := sc.Err(); err != nil {
		return run{}, err
	}
	if len(res.after) == 0 && len(res.curator) == 0 {
		return run{}, errors.New("no mutex or curator line of bench-scale.sh in the input")
	}
	return res, nil
}
