package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runLines is bench-scale.sh's output of a run with the cap reached twice:
// Curator stopped draining at 1,000 and queueing at 10,000.
const runLines = `# 2026-11-24T00:10:00Z 2 cores, load 5.10 4.20 3.30; ZooKeeper 3.8.4-2 standalone server; openjdk version "17.0.15" 2025-04-15; commit abc1234; N 100,1000,10000; Curator cap 180s
zkrecipes scale recipe=mutex n=100 queue_s=0.251 heap_per_waiter_b=3859 stack_per_waiter_b=19988 goroutines_per_waiter=2.00 drain_per_s=225 server_bytes_per_waiter=426 server_packets_per_waiter=2.1
zkrecipes scale recipe=mutex n=10000 queue_s=3.600 heap_per_waiter_b=2000 stack_per_waiter_b=16000 goroutines_per_waiter=2.00 drain_per_s=500 server_bytes_per_waiter=362 server_packets_per_waiter=2.1
zkrecipes scale recipe=held n=100 queue_s=0.251 heap_per_waiter_b=671 stack_per_waiter_b=0 goroutines_per_waiter=0.00 drain_per_s=225 server_bytes_per_waiter=426 server_packets_per_waiter=2.1
curator scale recipe=mutex n=100 queue_s=0.307 rss_per_waiter_b=164045 threads_per_waiter=1.01 drain_per_s=25.8 server_bytes_per_waiter=3087 server_packets_per_waiter=1.7 rss_b=77942784 hwm_b=206209024 queued=100 drained=100 stopped=none secs=4.200
curator scale recipe=mutex n=1000 queue_s=1.375 rss_per_waiter_b=200339 threads_per_waiter=1.00 drain_per_s=0.3 server_bytes_per_waiter=10031 server_packets_per_waiter=1.4 rss_b=263073792 hwm_b=2536448000 queued=1000 drained=6 stopped=draining secs=180.010
curator scale recipe=mutex n=10000 queue_s=180.002 rss_per_waiter_b=300339 threads_per_waiter=1.00 drain_per_s=0.0 server_bytes_per_waiter=10031 server_packets_per_waiter=1.4 rss_b=263073792 hwm_b=2536448000 queued=4321 drained=0 stopped=queueing secs=180.002
`

// TestParse: the mutex's and Curator's lines become points (other recipes
// are skipped), zkrecipes' with its heap and stacks, Curator's with its
// RSS and where it was stopped.
func TestParse(t *testing.T) {
	r, err := parse(strings.NewReader(runLines))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.header, "2026-11-24T00:10:00Z 2 cores, load 5.10") {
		t.Errorf("header %q", r.header)
	}
	want := []point{{n: 100, memory: 3859, heapStack: 3859 + 19988, queueS: 0.251}, {n: 10000, memory: 2000, heapStack: 18000, queueS: 3.6}}
	if len(r.after) != len(want) || r.after[0] != want[0] || r.after[1] != want[1] {
		t.Errorf("zkrecipes: %+v, want %+v", r.after, want)
	}
	want = []point{
		{n: 100, memory: 164045, queueS: 0.307},
		{n: 1000, memory: 200339, queueS: 1.375, stopped: "draining", queued: 1000, drained: 6, capS: 180.010},
		{n: 10000, memory: 300339, queueS: 180.002, stopped: "queueing", queued: 4321, capS: 180.002},
	}
	if len(r.curator) != len(want) || r.curator[0] != want[0] || r.curator[1] != want[1] || r.curator[2] != want[2] {
		t.Errorf("curator: %+v, want %+v", r.curator, want)
	}
}

// TestParseRejects: input without a mutex or Curator line, or with a field
// that is not a number, is an error, not an empty or wrong chart.
func TestParseRejects(t *testing.T) {
	for name, in := range map[string]string{
		"nothing":   "# header only\n",
		"held only": "zkrecipes scale recipe=held n=100 queue_s=0.2 heap_per_waiter_b=671 stack_per_waiter_b=0\n",
		"bad field": "zkrecipes scale recipe=mutex n=100 queue_s=x heap_per_waiter_b=1 stack_per_waiter_b=1\n",
		"no stop":   "curator scale recipe=mutex n=100 queue_s=1 rss_per_waiter_b=1 stopped=queueing secs=1\n",
	} {
		if _, err := parse(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestDraw draws the run as SVG: both panels, every series' legend, the
// run's header and the caption saying where Curator was stopped.
func TestDraw(t *testing.T) {
	r, err := parse(strings.NewReader(runLines))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "scale.svg")
	if err := draw(out, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	for _, want := range []string{
		"<svg", "Memory per waiter", "Time until all N waiters are queued",
		"zkrecipes before the fix: heap (recorded then)", "Curator 5.4, N threads: JVM RSS growth (this run)",
		"load 5.10 4.20 3.30, commit abc1234",
		"Curator was stopped at its cap: N = 1,000 after 180 s, while draining (all queued, 6 of 1,000 acquisitions done); N = 10,000 after 180 s, while queueing (4,321 of 10,000 nodes queued). * stopped before all N were queued.",
		"861 KB", "≥ 180 s*",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart has no %q", want)
		}
	}
}

func TestLabels(t *testing.T) {
	for v, want := range map[float64]string{2000: "2 KB", 238e3: "238 KB", 1.18e6: "1.2 MB", 3859: "3.9 KB", 512: "512 B"} {
		if got := bytesLabel(v); got != want {
			t.Errorf("bytesLabel(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{0.251: "0.25 s", 4.8: "4.8 s", 79: "79 s", 180.002: "180 s", 0.0123: "0.012 s"} {
		if got := secondsLabel(v); got != want {
			t.Errorf("secondsLabel(%v) = %q, want %q", v, got, want)
		}
	}
	for n, want := range map[int]string{100: "100", 2000: "2,000", 10000: "10,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
