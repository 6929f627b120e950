// Command herd shows the herd effect (惊群效应) of a naive ZooKeeper lock and
// how the sequential-node recipes avoid it, with numbers measured on a real
// ZooKeeper:
//
//	go run ./examples/herd                  # N = 5, 10, 25, 50, 100; well under a minute
//	go run ./examples/herd -quick           # N = 5, 10; a few seconds (CI smoke)
//	go run ./examples/herd -n 10,200 -hold 20ms -out herd.svg -servers 127.0.0.1:2181
//
// For each number of waiters N and each lock — exclusive (every contender
// races to create one node and watches it), mutex (a queue of sequential
// nodes, each watching only its predecessor) and rwlock (the same queue
// with readers and writers: the first holder and one waiter in ten are
// writers) — one holder takes the lock, N waiters queue up behind it, each
// on its own ZooKeeper session, and then the queue drains: every waiter
// takes the lock once, holds it for -hold (its critical section) and
// releases it. Measured over the drain:
//
//   - server packets per handoff: zk_packets_received + zk_packets_sent
//     from the server's `mntr`, before and after, divided by N (pings
//     included: the sessions ask for long timeouts, so they ping rarely).
//     The waiters queued before the drain, so this counts a release, its
//     notifications and the next holder's entry, not a waiter's queueing
//     (its create, listing and watch); README's "packets per handoff" in
//     the table of locks counts the whole acquire-and-release cycle per
//     acquisition, queueing and session set-up included, hence more;
//   - requests and watch events per acquire, counted by every session
//     (the counters the module's benchmarks read, internal/connlink's
//     Stats);
//   - handoff latency, p50 and p99: from the moment a holder starts its
//     release to the moment the next holder's Acquire returns (for readers
//     let in together, the release of the writer before them).
//
// With the naive lock every release wakes all the waiters; each sends a
// create (a write that goes through the leader and fails for all but one)
// and reads the node again to watch it: the cost of a handoff grows with N
// and draining the queue costs O(N²). The mutex wakes only the next waiter,
// the read/write lock only the waiters that may proceed: their cost per
// handoff stays flat.
//
// The hold matters: with an empty critical section, waiters woken by a
// release often find the lock free again before they have set their
// watch, and the herd hides in the noise. 10ms shows it plainly and keeps
// the whole run short.
//
// The results are printed as a table (stdout), drawn as a chart of packets
// per handoff against N (-out; .png, .svg or .pdf; by default herd.png in a
// new temporary directory, whose path is printed), and the exact command
// to reproduce them is printed last. Progress goes to stderr. Without
// -servers or ZK_SERVERS it starts its own ZooKeeper (zktest: Docker or a
// local install; see package zktest), which takes any number of
// connections from one address; a server of your own must allow N+1
// (ZooKeeper's default maxClientCnxns is 60). It exits non-zero if a lock
// ever let two holders in at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
)

// config is what the flags set.
type config struct {
	waiters []int         // the values of N, ascending
	hold    time.Duration // each holder's critical section
	out     string        // chart file; "" for none
	tempOut bool          // out is in a temporary directory: -out was not given
	servers []string      // nil: ZK_SERVERS or start one
	quick   bool
}

// defaultWaiters and defaultHold make the full run: the herd is plain at
// N = 100 and the whole run takes about a minute on two cores.
const (
	defaultWaiters = "5,10,25,50,100"
	defaultHold    = 10 * time.Millisecond
	quickWaiters   = "5,10"
	quickHold      = 5 * time.Millisecond
)

// what is the summary -h prints.
const what = "The herd effect of a naive lock (every waiter wakes on each release) against the\n" +
	"sequential-node recipes, measured: server packets, requests and watch events per\n" +
	"handoff, handoff latency; a table, a chart (-out) and the command to reproduce it."

func main() {
	var (
		cfg     config
		waiters string
		servers string
	)
	fs := demo.Flags("herd", what)
	fs.StringVar(&waiters, "n", defaultWaiters, "numbers of waiters to measure, comma-separated")
	fs.DurationVar(&cfg.hold, "hold", defaultHold, "how long each holder keeps the lock (its critical section)")
	fs.StringVar(&cfg.out, "out", "", "chart of packets per handoff against N (.png, .svg or .pdf); default herd.png in a new temporary directory; -out='' for none")
	fs.StringVar(&servers, "servers", "", "ZooKeeper servers host:port,...; default: ZK_SERVERS, or start one")
	fs.BoolVar(&cfg.quick, "quick", false, "smoke run: -n "+quickWaiters+" -hold "+quickHold.String()+" unless given")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits 0 on -h, 2 on a bad flag
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.quick {
		if !set["n"] {
			waiters = quickWaiters
		}
		if !set["hold"] {
			cfg.hold = quickHold
		}
	}
	var err error
	if cfg.waiters, err = parseWaiters(waiters); err != nil {
		fail(err)
	}
	if !set["out"] {
		dir, err := os.MkdirTemp("", "zkrecipes-herd-")
		if err != nil {
			fail(err)
		}
		cfg.out, cfg.tempOut = filepath.Join(dir, "herd.png"), true
	}
	if cfg.hold < 0 {
		fail(errors.New("-hold must not be negative"))
	}
	if servers != "" {
		cfg.servers = strings.Split(servers, ",")
	}

	ctx := context.Background()
	addrs, stop, err := zookeeper(ctx, cfg.servers)
	if err != nil {
		fail(err)
	}
	err = run(ctx, cfg, addrs, os.Stdout, newProgress(os.Stderr))
	stop()
	if err != nil {
		fail(err)
	}
	fmt.Printf("\nreproduce: %s\n", reproduce(cfg))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "herd:", err)
	os.Exit(1)
}

// parseWaiters reads "5,10,25": positive, distinct, sorted on return.
func parseWaiters(s string) ([]int, error) {
	var ns []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-n %q: want positive numbers separated by commas", s)
		}
		if !seen[n] {
			seen[n] = true
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns, nil
}

// reproduce is the command line that runs this measurement again: every
// setting spelled out, with the environment that chose the ZooKeeper.
func reproduce(cfg config) string {
	var b strings.Builder
	for _, env := range []string{"ZK_SERVERS", "ZK_BACKEND", "ZK_IMAGE"} {
		if v := os.Getenv(env); v != "" && cfg.servers == nil {
			fmt.Fprintf(&b, "%s=%s ", env, shellQuote(v))
		}
	}
	ns := make([]string, len(cfg.waiters))
	for i, n := range cfg.waiters {
		ns[i] = strconv.Itoa(n)
	}
	fmt.Fprintf(&b, "go run ./examples/herd -n %s -hold %v", strings.Join(ns, ","), cfg.hold)
	if !cfg.tempOut {
		fmt.Fprintf(&b, " -out %s", shellQuote(cfg.out))
	}
	if cfg.servers != nil {
		fmt.Fprintf(&b, " -servers %s", shellQuote(strings.Join(cfg.servers, ",")))
	}
	return b.String()
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9._/:,=+-]+$`)

// shellQuote quotes s for a POSIX shell unless it needs no quoting.
func shellQuote(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
