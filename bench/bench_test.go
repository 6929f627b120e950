// Package bench_test checks that the benchmark programs under bench/ run and
// print the lines scripts/bench-peers.sh parses.
package bench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The patterns summarize.py matches (there with the round number in
// front), anchored here at both ends.
var (
	handoffLine = regexp.MustCompile(`^(\w+) (\w+) clients=\d+(?: threads=\d+)? cycles=\d+ secs=[\d.]+ handoffs_per_s=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+) violations=(\d+)$`)
	limitLine   = regexp.MustCompile(`^limit (\w+) clients=1 ops=\d+ secs=[\d.]+ ops_per_s=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+)$`)
)

// output runs cmd and returns its stdout as lines, failing t with its
// stderr if it fails.
func output(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "%s: %s", cmd, stderr)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// goBuild builds the main package pkg into dir and returns the binary.
func goBuild(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, out)
	return bin
}

// TestPeerPrograms runs every peer program on every recipe it has, with a
// small load, and checks its one line: the library, the recipe, no
// violation.
func TestPeerPrograms(t *testing.T) {
	cp := testzk.CompileCurator(t, "peers/curator/CuratorBench.java")
	testzk.Need(t, "kazoo (apt-get install python3-kazoo)",
		exec.Command("/usr/bin/python3", "-c", "import kazoo.recipe.lock").Run())
	gozk := goBuild(t, t.TempDir(), "./peers/gozk")
	servers := strings.Join(zktest.New(t).Servers(), ",")

	peers := map[string]func(recipe string) *exec.Cmd{
		"curator": func(r string) *exec.Cmd { return exec.Command("java", "-cp", cp, "CuratorBench", servers, r, "3", "4") },
		"kazoo": func(r string) *exec.Cmd {
			return exec.Command("/usr/bin/python3", "peers/kazoo/kazoo_bench.py", servers, r, "3", "4")
		},
		"gozk": func(r string) *exec.Cmd { return exec.Command(gozk, servers, r, "3", "4") },
	}
	for _, lib := range []string{"curator", "kazoo", "gozk"} {
		recipes := []string{"mutex", "semmutex", "write", "read"}
		if lib == "gozk" {
			recipes = []string{"mutex"}
		}
		for _, recipe := range recipes {
			t.Run(lib+"/"+recipe, func(t *testing.T) {
				lines := output(t, peers[lib](recipe))
				require.Len(t, lines, 1, "one line on stdout")
				m := handoffLine.FindStringSubmatch(lines[0])
				require.NotNil(t, m, "line %q", lines[0])
				require.Equal(t, []string{lib, recipe}, m[1:3], "line %q", lines[0])
				require.Equal(t, "0", m[6], "violations in %q", lines[0])
			})
		}
	}
}

// TestPeerProgramsThreads runs the same-process scenario of the programs
// that have it (Curator's and zk.Lock's mutex): 2 clients with 3 threads
// each, whose line says threads=3 and counts every thread's rounds.
func TestPeerProgramsThreads(t *testing.T) {
	cp := testzk.CompileCurator(t, "peers/curator/CuratorBench.java")
	gozk := goBuild(t, t.TempDir(), "./peers/gozk")
	servers := strings.Join(zktest.New(t).Servers(), ",")
	for lib, cmd := range map[string]*exec.Cmd{
		"curator": exec.Command("java", "-cp", cp, "CuratorBench", servers, "mutex", "2", "4", "3"),
		"gozk":    exec.Command(gozk, servers, "mutex", "2", "4", "3"),
	} {
		t.Run(lib, func(t *testing.T) {
			lines := output(t, cmd)
			require.Len(t, lines, 1, "one line on stdout")
			m := handoffLine.FindStringSubmatch(lines[0])
			require.NotNil(t, m, "line %q", lines[0])
			require.Contains(t, lines[0], " clients=2 threads=3 cycles=4 ")
			require.Equal(t, "0", m[6], "violations in %q", lines[0])
		})
	}
}

// TestPeerProgramsRejectUnknownRecipe: a recipe a peer does not have is a
// usage error (exit status 2), not a run of some other lock.
func TestPeerProgramsRejectUnknownRecipe(t *testing.T) {
	cp := testzk.CompileCurator(t, "peers/curator/CuratorBench.java")
	gozk := goBuild(t, t.TempDir(), "./peers/gozk")
	for name, cmd := range map[string]*exec.Cmd{
		"curator": exec.Command("java", "-cp", cp, "CuratorBench", "127.0.0.1:1", "semaphore", "1", "1"),
		"kazoo":   exec.Command("/usr/bin/python3", "peers/kazoo/kazoo_bench.py", "127.0.0.1:1", "semaphore", "1", "1"),
		"gozk":    exec.Command(gozk, "127.0.0.1:1", "write", "1", "1"),
	} {
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, name)
		require.Equal(t, 2, ee.ExitCode(), name)
	}
}

// TestLimitProgram runs bench/limit and checks its two lines: set-data
// writes, then create+delete pairs.
func TestLimitProgram(t *testing.T) {
	limit := goBuild(t, t.TempDir(), "./limit")
	servers := strings.Join(zktest.New(t).Servers(), ",")
	lines := output(t, exec.Command(limit, servers, "20"))
	require.Len(t, lines, 2)
	for i, kind := range []string{"setdata", "createdelete"} {
		m := limitLine.FindStringSubmatch(lines[i])
		require.NotNil(t, m, "line %q", lines[i])
		require.Equal(t, kind, m[1])
		require.Contains(t, lines[i], " ops=20 ")
	}
}

// scaleLine is the line of bench/scale (scripts/bench-scale.sh).
var scaleLine = regexp.MustCompile(`^zkrecipes scale recipe=(\w+) n=(\d+) queue_s=[\d.]+ heap_per_waiter_b=-?\d+ stack_per_waiter_b=-?\d+ goroutines_per_waiter=-?[\d.]+ drain_per_s=[\d.]+ server_bytes_per_waiter=\d+ server_packets_per_waiter=-?[\d.]+(?: drain_bytes_per_waiter=\d+)?$`)

// TestScaleProgram runs bench/scale on every recipe with two small N and
// checks its lines.
func TestScaleProgram(t *testing.T) {
	scale := goBuild(t, t.TempDir(), "./scale")
	servers := strings.Join(zktest.New(t).Servers(), ",")
	recipes := []string{"mutex", "read", "write", "semmutex", "semaphore", "leader", "multilock", "held"}
	lines := output(t, exec.Command(scale, "-servers", servers, "-n", "3,5", "-recipes", strings.Join(recipes, ",")))
	require.Len(t, lines, 2*len(recipes))
	for i, l := range lines {
		m := scaleLine.FindStringSubmatch(l)
		require.NotNil(t, m, "line %q", l)
		require.Equal(t, []string{recipes[i/2], []string{"3", "5"}[i%2]}, m[1:3], "line %q", l)
	}
}

// curatorScaleLine is the line of bench/scale's curator step.
var curatorScaleLine = regexp.MustCompile(`^curator scale recipe=mutex n=(\d+) queue_s=[\d.]+ rss_per_waiter_b=-?\d+ threads_per_waiter=-?[\d.]+ drain_per_s=[\d.]+ server_bytes_per_waiter=\d+ server_packets_per_waiter=-?[\d.]+ rss_b=\d+ hwm_b=\d+ queued=(\d+) drained=(\d+) stopped=(none|queueing|draining) secs=[\d.]+$`)

// TestScaleProgramCurator runs bench/scale's curator step with two small
// N, which Curator queues and drains within the cap (every thread
// acquired once), and with a cap it cannot meet: the JVM is killed while
// its threads queue, and the line says so and how far they got.
func TestScaleProgramCurator(t *testing.T) {
	cp := testzk.CompileCurator(t, "peers/curator/CuratorScale.java")
	scale := goBuild(t, t.TempDir(), "./scale")
	servers := strings.Join(zktest.New(t).Servers(), ",")
	lines := output(t, exec.Command(scale, "-servers", servers, "-n", "3,5", "-recipes", "curator", "-curator-cp", cp))
	require.Len(t, lines, 2)
	for i, l := range lines {
		m := curatorScaleLine.FindStringSubmatch(l)
		require.NotNil(t, m, "line %q", l)
		n := []string{"3", "5"}[i]
		require.Equal(t, []string{n, n, n, "none"}, m[1:], "line %q", l)
	}

	// 1,000 lock nodes cannot be created within 1 ms; the first look at
	// the queue after the cap stops it.
	lines = output(t, exec.Command(scale, "-servers", servers, "-n", "1000", "-recipes", "curator", "-curator-cp", cp, "-curator-cap", "1ms"))
	require.Len(t, lines, 1)
	m := curatorScaleLine.FindStringSubmatch(lines[0])
	require.NotNil(t, m, "line %q", lines[0])
	require.Equal(t, "queueing", m[4], "line %q", lines[0])
	queued, err := strconv.Atoi(m[2])
	require.NoError(t, err)
	require.Less(t, queued, 1000, "line %q", lines[0])
	require.Equal(t, "0", m[3], "nothing drained: %q", lines[0])
}

// TestSummarize feeds summarize.py two rounds with known figures and checks
// the medians, the spreads and the ratios it prints, and its exit status.
func TestSummarize(t *testing.T) {
	line := func(round, lib, recipe, hps, violations string) string {
		return round + " " + lib + " " + recipe + " clients=2 cycles=3 secs=1.000 handoffs_per_s=" + hps +
			" p50_ms=1.000 p99_ms=2.000 violations=" + violations + "\n"
	}
	results := filepath.Join(t.TempDir(), "results")
	write := func(content string) {
		require.NoError(t, os.WriteFile(results, []byte(content), 0o644))
	}
	rounds := "1 limit setdata clients=1 ops=6 secs=1.000 ops_per_s=1000.0 p50_ms=1.000 p99_ms=2.000\n" +
		"1 limit createdelete clients=1 ops=6 secs=1.000 ops_per_s=200.0 p50_ms=4.000 p99_ms=6.000\n" +
		line("1", "curator", "mutex", "200.0", "0") + line("1", "zkrecipes", "mutex", "300.0", "0") +
		"2 limit setdata clients=1 ops=6 secs=1.000 ops_per_s=500.0 p50_ms=1.000 p99_ms=2.000\n" +
		"2 limit createdelete clients=1 ops=6 secs=1.000 ops_per_s=250.0 p50_ms=4.000 p99_ms=6.000\n" +
		line("2", "zkrecipes", "mutex", "500.0", "0") + line("2", "curator", "mutex", "200.0", "0")
	write(rounds)
	out := strings.Join(output(t, exec.Command("/usr/bin/python3", "summarize.py", results)), "\n")
	for _, want := range []string{
		"| set-data writes | 750 (500–1000) | 1.00 | 2.00 |",
		"| create+delete pairs | 225 (200–250) | 4.00 | 6.00 |",
		// zkrecipes ÷ curator: 1.5 in round 1, 2.5 in round 2; curator ÷
		// set-data: 0.2 and 0.4; ÷ pairs: 1.0 and 0.8.
		"| mutex | curator | 200 (200–200) | 1.00 | 2.00 | 0 | 2.00× (1.50×–2.50×) | 0.30 (0.20–0.40) | 0.90 (0.80–1.00) |",
		// zkrecipes ÷ set-data: 0.3 and 1.0; ÷ pairs: 1.5 and 2.0.
		"| mutex | zkrecipes | 400 (300–500) | 1.00 | 2.00 | 0 | — | 0.65 (0.30–1.00) | 1.75 (1.50–2.00) |",
	} {
		require.Contains(t, out, want)
	}

	write(rounds + line("3", "curator", "mutex", "100.0", "1"))
	err := exec.Command("/usr/bin/python3", "summarize.py", results).Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "a violation makes summarize.py fail")
	require.Equal(t, 1, ee.ExitCode())
}

// TestSummarizeTailAndCPURatios: zkrecipes ÷ each library in p99, in the
// servers' CPU per handoff and in that CPU without their JIT compilers',
// round by round, beside the throughput ratio; a library without
// server_cpu_ms has no CPU ratio, a round without server_jit_ms no ratio
// without the JIT.
func TestSummarizeTailAndCPURatios(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	line := func(round, lib, hps, p99, cpu string) string {
		l := round + " " + lib + " mutex clients=2 cycles=3 secs=1.000 handoffs_per_s=" + hps + " p50_ms=1.000 p99_ms=" + p99 + " violations=0"
		if cpu != "" {
			l += " server_cpu_ms=" + cpu
		}
		return l + "\n"
	}
	content := line("1", "gozk", "200.0", "4.000", "2.000") + line("1", "zkrecipes", "300.0", "3.000", "3.000") +
		line("2", "gozk", "200.0", "5.000", "2.000 server_jit_ms=1.000") +
		line("2", "zkrecipes", "300.0", "10.000", "1.000 server_jit_ms=0.500") +
		line("2", "curator", "300.0", "10.000", "")
	require.NoError(t, os.WriteFile(results, []byte(content), 0o644))
	out := strings.Join(output(t, exec.Command("/usr/bin/python3", "summarize.py", results)), "\n")
	for _, want := range []string{
		// p99 3/4 and 10/5; server CPU 3/2 and 1/2; without the JIT
		// (round 2 only) 0.5/1; the JIT's part: gozk's 1.0.
		"| 2.00 (2.00–2.00) | 1.00 | 1.38× (0.75×–2.00×) | 1.00× (0.50×–1.50×) | 0.50× |",
		"| mutex | zkrecipes | 300 (300–300) | 1.00 | 6.50 | 0 | — | — | — | 2.00 (1.00–3.00) | 0.50 | — | — | — |",
		"| mutex | curator | 300 | 1.00 | 10.00 | 0 | 1.00× | — | — | — | — | 1.00× | — | — |",
	} {
		require.Contains(t, out, want)
	}
}

// TestSummarizeThreads: lines of the same-process scenario (threads=T) are
// rows of their own, compared with the same library's lines of the same T
// only.
func TestSummarizeThreads(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	content := "1 limit setdata clients=1 ops=6 secs=1.000 ops_per_s=1000.0 p50_ms=1.000 p99_ms=2.000\n" +
		"1 limit createdelete clients=1 ops=6 secs=1.000 ops_per_s=200.0 p50_ms=4.000 p99_ms=6.000\n" +
		"1 curator mutex clients=1 threads=10 cycles=3 secs=1.000 handoffs_per_s=100.0 p50_ms=1.000 p99_ms=2.000 violations=0\n" +
		"1 zkrecipes mutex clients=1 threads=10 cycles=3 secs=1.000 handoffs_per_s=8000.0 p50_ms=1.000 p99_ms=2.000 violations=0\n" +
		"1 curator mutex clients=10 cycles=3 secs=1.000 handoffs_per_s=200.0 p50_ms=1.000 p99_ms=2.000 violations=0\n" +
		"1 zkrecipes mutex clients=10 cycles=3 secs=1.000 handoffs_per_s=300.0 p50_ms=1.000 p99_ms=2.000 violations=0\n"
	require.NoError(t, os.WriteFile(results, []byte(content), 0o644))
	out := strings.Join(output(t, exec.Command("/usr/bin/python3", "summarize.py", results)), "\n")
	for _, want := range []string{
		"| mutex ×10 threads | curator | 100 | 1.00 | 2.00 | 0 | 80.00× | 0.10 | 0.50 |",
		"| mutex ×10 threads | zkrecipes | 8000 | 1.00 | 2.00 | 0 | — | 8.00 | 40.00 |",
		"| mutex | curator | 200 | 1.00 | 2.00 | 0 | 1.50× | 0.20 | 1.00 |",
	} {
		require.Contains(t, out, want)
	}
}
