// Command bench measures lock handoffs under contention, in the format of
// the peer benchmarks in bench/peers (Curator, kazoo, go-zookeeper's
// zk.Lock; scripts/bench-peers.sh runs them all side by side), so results
// can be compared line by line:
//
//	go run ./examples/bench -recipe mutex -clients 10 -cycles 100 [-servers host:port,...]
//	go run ./examples/bench -recipe mutex -clients 1 -goroutines 100 -local-handoff 100 -probe
//
// N sessions each do M acquire/release rounds on one lock path with an empty
// critical section, all starting together. Without -servers (or ZK_SERVERS)
// it starts its own ZooKeeper. Progress goes to stderr; stdout gets exactly
// one line:
//
//	zkrecipes <recipe> clients=N cycles=M secs=S handoffs_per_s=X p50_ms=A p99_ms=B violations=V
//
// With -goroutines G above 1, each session has G goroutines (each with its
// own handle on the session), each doing M rounds, and the line says
// threads=G after clients=N (the same-process scenario). -local-handoff P
// makes the handles share one ZooKeeper contender per session
// (WithLocalHandoff(P, -handoff-budget); mutex and semaphoremutex). -probe
// adds a contender on a session of its own that acquires and releases the
// lock in a loop while the others run, and writes the longest time it
// waited to stderr: the cross-process fairness under full local
// contention. The probe's acquires are not counted in the line.
//
// violations counts rounds in which a holder found more holders inside than
// the recipe allows (one, or the lease count); it must be 0. When the server
// answers the mntr four-letter word, the server's packets per handoff are
// written to stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

type config struct {
	recipe         string
	clients        int
	cycles         int
	leases         int
	goroutines     int
	handoff        int
	budget         time.Duration
	probe          bool
	servers        string
	sessionTimeout time.Duration
}

// what is the summary -h prints.
const what = "Lock handoffs under contention: N sessions, M acquire/release rounds each on one\n" +
	"path; one line on stdout in the format of the peer benchmarks (Curator, kazoo, zk.Lock)."

func main() {
	var cfg config
	fs := demo.Flags("bench", what)
	fs.StringVar(&cfg.recipe, "recipe", "mutex", "one of "+strings.Join(recipeNames(), ", "))
	fs.IntVar(&cfg.clients, "clients", 10, "sessions contending for the lock")
	fs.IntVar(&cfg.cycles, "cycles", 100, "acquire/release rounds per session")
	fs.IntVar(&cfg.leases, "leases", 2, "leases of the semaphore (recipe semaphore)")
	fs.IntVar(&cfg.goroutines, "goroutines", 1, "goroutines per session, each with its own handle")
	fs.IntVar(&cfg.handoff, "local-handoff", 0, "WithLocalHandoff(N, -handoff-budget) for mutex and semaphoremutex; 0: off")
	fs.DurationVar(&cfg.budget, "handoff-budget", 0, "time budget of -local-handoff; 0: none")
	fs.BoolVar(&cfg.probe, "probe", false, "a contender on its own session measures its longest wait (stderr)")
	fs.StringVar(&cfg.servers, "servers", "", "ZooKeeper servers host:port,...; default: ZK_SERVERS, or start one")
	fs.DurationVar(&cfg.sessionTimeout, "session-timeout", 30*time.Second, "session timeout")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits 0 on -h, 2 on a bad flag
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	r, ok := recipes[cfg.recipe]
	switch {
	case !ok:
		return fmt.Errorf("unknown recipe %q (want one of %s)", cfg.recipe, strings.Join(recipeNames(), ", "))
	case cfg.clients < 1 || cfg.cycles < 1 || cfg.goroutines < 1:
		return errors.New("-clients, -goroutines and -cycles must be at least 1")
	case cfg.handoff < 0 || cfg.handoff > 0 && r.handoff == nil:
		return fmt.Errorf("-local-handoff: not for recipe %s, or negative", cfg.recipe)
	case cfg.leases < 1:
		return errors.New("-leases must be at least 1")
	}
	ctx := context.Background()
	servers, stop, err := zookeeper(ctx, cfg.servers)
	if err != nil {
		return err
	}
	defer stop()

	path := fmt.Sprintf("/bench-zkrecipes-%s-%d", cfg.recipe, time.Now().UnixNano())
	mk := func(s *conn.Session) (locker, error) {
		if cfg.handoff > 0 {
			return r.handoff(s, path, cfg.handoff, cfg.budget)
		}
		return r.make(s, path, cfg.leases)
	}
	lockers := make([]locker, 0, cfg.clients*cfg.goroutines)
	sessions := make([]*conn.Session, cfg.clients)
	for i := range sessions {
		s, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(cfg.sessionTimeout))
		if err != nil {
			return err
		}
		defer s.Close()
		sessions[i] = s
		if i == 0 {
			// The lock path exists before the clients start, as in the
			// peer benchmarks: no run pays for creating it.
			if _, err := s.Create(ctx, path, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
				return err
			}
		}
		for range cfg.goroutines {
			l, err := mk(s)
			if err != nil {
				return err
			}
			lockers = append(lockers, l)
		}
	}
	stopProbe := func() {}
	if cfg.probe {
		s, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(cfg.sessionTimeout))
		if err != nil {
			return err
		}
		defer s.Close()
		l, err := mk(s)
		if err != nil {
			return err
		}
		stopProbe = probe(ctx, l)
	}
	statsBefore := totalStats(sessions)
	allowed := int32(1)
	if cfg.recipe == "semaphore" {
		allowed = int32(cfg.leases)
	}

	packetsBefore, mntrErr := packets(ctx, servers)
	var (
		inside, violations atomic.Int32
		done               atomic.Int64
		mu                 sync.Mutex
		lat                = make([]time.Duration, 0, len(lockers)*cfg.cycles)
		wg                 sync.WaitGroup
		start              = make(chan struct{})
		firstErr           error
		errOnce            sync.Once
	)
	for _, l := range lockers {
		wg.Add(1)
		go func(l locker) {
			defer wg.Done()
			<-start
			mine := make([]time.Duration, 0, cfg.cycles)
			for j := 0; j < cfg.cycles; j++ {
				t0 := time.Now()
				if _, err := l.Acquire(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				mine = append(mine, time.Since(t0))
				if !r.shared {
					if inside.Add(1) > allowed {
						violations.Add(1)
					}
					inside.Add(-1)
				}
				if err := l.Release(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(l)
	}
	stopProgress := progress(&done, len(lockers)*cfg.cycles)
	t0 := time.Now()
	close(start)
	wg.Wait()
	secs := time.Since(t0).Seconds()
	stopProgress()
	stopProbe()
	if firstErr != nil {
		return firstErr
	}

	n := len(lockers) * cfg.cycles
	if packetsAfter, err := packets(ctx, servers); err == nil && mntrErr == nil {
		fmt.Fprintf(os.Stderr, "server packets per handoff: %.1f (mntr zk_packets_sent+zk_packets_received over the run / %d acquisitions)\n",
			float64(packetsAfter-packetsBefore)/float64(n), n)
	}
	d := totalStats(sessions).Sub(statsBefore)
	fmt.Fprintf(os.Stderr, "client requests per acquire: %.2f %s; watch events per acquire: %.2f\n",
		float64(d.TotalRequests())/float64(n), perOp(d, n), float64(d.WatchEvents)/float64(n))
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	threads := ""
	if cfg.goroutines > 1 {
		threads = fmt.Sprintf(" threads=%d", cfg.goroutines)
	}
	fmt.Printf("zkrecipes %s clients=%d%s cycles=%d secs=%.3f handoffs_per_s=%.1f p50_ms=%.3f p99_ms=%.3f violations=%d\n",
		cfg.recipe, cfg.clients, threads, cfg.cycles, secs, float64(n)/secs, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), violations.Load())
	return nil
}

// totalStats sums the sessions' request and watch counters.
func totalStats(sessions []*conn.Session) connlink.Stats {
	sum := connlink.Stats{Requests: map[string]int64{}}
	for _, s := range sessions {
		st := connlink.Of(s).Stats()
		for k, v := range st.Requests {
			sum.Requests[k] += v
		}
		sum.WatchEvents += st.WatchEvents
	}
	return sum
}

// perOp formats the non-zero request counts per acquire, by operation.
func perOp(d connlink.Stats, n int) string {
	var ops []string
	for op, v := range d.Requests {
		if v > 0 {
			ops = append(ops, fmt.Sprintf("%s=%.2f", op, float64(v)/float64(n)))
		}
	}
	sort.Strings(ops)
	return "(" + strings.Join(ops, " ") + ")"
}

// zookeeper returns the servers to use, starting a ZooKeeper if none is
// given; its first line to stderr says which.
func zookeeper(ctx context.Context, flagServers string) ([]string, func(), error) {
	var servers []string
	if flagServers != "" {
		servers = strings.Split(flagServers, ",")
	}
	return demo.Start(ctx, servers, os.Stderr)
}

// packets sums zk_packets_sent and zk_packets_received over the servers.
func packets(ctx context.Context, servers []string) (int64, error) {
	var sum int64
	for _, s := range servers {
		m, err := zktest.MntrAt(ctx, s)
		if err != nil {
			return 0, err
		}
		for _, k := range []string{"zk_packets_sent", "zk_packets_received"} {
			var v int64
			if _, err := fmt.Sscan(m[k], &v); err != nil {
				return 0, fmt.Errorf("mntr %s: %s=%q", s, k, m[k])
			}
			sum += v
		}
	}
	return sum, nil
}

// progress prints how far the run is every two seconds, until stopped.
func progress(done *atomic.Int64, total int) func() {
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fmt.Fprintf(os.Stderr, "  %d/%d handoffs\n", done.Load(), total)
			case <-stop:
				return
			}
		}
	}()
	return func() { close(stop); <-finished }
}

// probe acquires and releases l in a loop until stopped, then writes to
// stderr how many times and the longest wait.
func probe(ctx context.Context, l locker) (stop func()) {
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var longest time.Duration
		n := 0
		for pctx.Err() == nil {
			t0 := time.Now()
			if _, err := l.Acquire(pctx); err != nil {
				break
			}
			longest = max(longest, time.Since(t0))
			n++
			if err := l.Release(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "probe: release:", err)
				break
			}
		}
		fmt.Fprintf(os.Stderr, "probe (a contender on its own session): %d acquires, longest wait %.3f ms\n",
			n, float64(longest.Microseconds())/1e3)
	}()
	return func() { cancel(); <-done }
}
