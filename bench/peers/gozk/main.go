// Command gozk is the benchmark of go-zookeeper's own lock recipe (zk.Lock)
// under the load of examples/bench, for scripts/bench-peers.sh:
//
//	go run ./bench/peers/gozk SERVERS mutex CLIENTS CYCLES [THREADS]
//
// SERVERS is host:port[,host:port...]. CLIENTS sessions (one zk.Conn each)
// each do CYCLES Lock/Unlock rounds on one lock path with an empty critical
// section, all starting together once every session is connected. With
// THREADS above 1, each session has THREADS goroutines, each with its own
// zk.Lock on the session's zk.Conn (a zk.Lock is one contender), each doing
// CYCLES rounds, and the line says threads=THREADS after clients=. Stdout
// gets exactly one line, in the format of examples/bench:
//
//	gozk mutex clients=N cycles=M secs=S handoffs_per_s=X p50_ms=A p99_ms=B violations=V
//
// p50 and p99 are of the time Lock takes; violations counts rounds in which a
// holder found another holder inside (it must be 0). go-zookeeper has no
// other lock recipe, so mutex is the only RECIPE.
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

const sessionTimeout = 30 * time.Second // as examples/bench's default

func main() {
	if (len(os.Args) != 5 && len(os.Args) != 6) || os.Args[2] != "mutex" {
		fmt.Fprintln(os.Stderr, "usage: gozk SERVERS mutex CLIENTS CYCLES [THREADS]")
		os.Exit(2)
	}
	clients, err1 := strconv.Atoi(os.Args[3])
	cycles, err2 := strconv.Atoi(os.Args[4])
	threads, err3 := 1, error(nil)
	if len(os.Args) == 6 {
		threads, err3 = strconv.Atoi(os.Args[5])
	}
	if err := errors.Join(err1, err2, err3); err != nil || clients < 1 || cycles < 1 || threads < 1 {
		fmt.Fprintln(os.Stderr, "gozk: CLIENTS, CYCLES and THREADS must be integers ≥ 1")
		os.Exit(2)
	}
	if err := run(strings.Split(os.Args[1], ","), clients, cycles, threads); err != nil {
		fmt.Fprintln(os.Stderr, "gozk:", err)
		os.Exit(1)
	}
}

// quiet drops go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func run(servers []string, clients, cycles, threads int) error {
	path := fmt.Sprintf("/bench-gozk-mutex-%d", time.Now().UnixNano())
	conns := make([]*zk.Conn, clients)
	for i := range conns {
		c, _, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(quiet{}))
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
		// The first request waits for the session: every client is
		// connected before the clock starts.
		if _, _, err := c.Exists("/"); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
	}
	if _, err := conns[0].Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}

	var (
		inside, violations atomic.Int32
		mu                 sync.Mutex
		lat                = make([]time.Duration, 0, clients*threads*cycles)
		wg                 sync.WaitGroup
		start              = make(chan struct{})
		errs               = make(chan error, clients*threads)
		locks              []*zk.Lock
	)
	for _, c := range conns {
		for range threads {
			locks = append(locks, zk.NewLock(c, path, zk.WorldACL(zk.PermAll)))
		}
	}
	for _, lk := range locks {
		wg.Add(1)
		go func(l *zk.Lock) {
			defer wg.Done()
			<-start
			mine := make([]time.Duration, 0, cycles)
			for j := 0; j < cycles; j++ {
				t0 := time.Now()
				if err := l.Lock(); err != nil {
					errs <- fmt.Errorf("lock: %w", err)
					return
				}
				mine = append(mine, time.Since(t0))
				if inside.Add(1) > 1 {
					violations.Add(1)
				}
				inside.Add(-1)
				if err := l.Unlock(); err != nil {
					errs <- fmt.Errorf("unlock: %w", err)
					return
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(lk)
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	secs := time.Since(t0).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	n := clients * threads * cycles
	threadsField := ""
	if threads > 1 {
		threadsField = fmt.Sprintf(" threads=%d", threads)
	}
	fmt.Printf("gozk mutex clients=%d%s cycles=%d secs=%.3f handoffs_per_s=%.1f p50_ms=%.3f p99_ms=%.3f violations=%d\n",
		clients, threadsField, cycles, secs, float64(n)/secs, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), violations.Load())
	return nil
}
