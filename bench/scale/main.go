// Command scale measures what waiters and held locks cost in one process
// (a flash sale in one process): N goroutines of one session queued on one lock
// that another session holds, and one session holding N distinct locks.
// scripts/bench-scale.sh runs it on a fresh standalone ZooKeeper:
//
//	go run ./bench/scale -servers HOST:PORT [-n 100,1000,10000] [-recipes mutex,read,...] [-curator-cp CP [-curator-cap 3m]]
//
// For each recipe and N it prints one line on stdout:
//
//	zkrecipes scale recipe=R n=N queue_s=S heap_per_waiter_b=H stack_per_waiter_b=K goroutines_per_waiter=G drain_per_s=D server_bytes_per_waiter=B server_packets_per_waiter=P drain_bytes_per_waiter=E
//
// queue_s is the time from starting the N goroutines until every one of
// them waits on a watch the server has set (the waiters' session's
// WatchesSet; the semaphore's N-1: one of them holds its internal lock and
// watches the lease nodes). heap_per_waiter_b is the growth of the live
// heap (after two collections) over that time, divided by N; goroutine
// stacks are apart, in stack_per_waiter_b, and so are the goroutines'
// descriptors, which the runtime keeps for reuse once a goroutine ends:
// the program starts and ends enough goroutines before the first step,
// so that no step pays for them and the steps compare. drain_per_s is N over the time
// from the holder's release until every waiter has acquired and released
// once. server_bytes_per_waiter is what the server sent to the waiters'
// session while it queued (counted by a proxy in this program);
// server_packets_per_waiter is mntr's zk_packets_sent over the same time
// (all sessions). drain_bytes_per_waiter is what the server sent to the
// waiters' session from the holder's release until the drain ended,
// divided by N (not printed for recipe=held). For recipe=held (one
// session acquiring N distinct mutexes one after the other and holding
// them all) the same fields mean:
// queue_s the time to acquire them all, heap and stack per held lock,
// drain_per_s the acquisitions per second.
//
// Recipes: mutex, read and write (rwlock; the holder has the write lock),
// semmutex (semaphoremutex.Mutex), semaphore (one lease), leader
// (Campaign), multilock (two mutexes, the first held), held. Default
// options everywhere.
//
// Recipe curator is Apache Curator's InterProcessMutex beside the mutex
// step: N threads of one JVM sharing one CuratorFramework (one session)
// and one InterProcessMutex (bench/peers/curator/CuratorScale.java,
// compiled onto the class path -curator-cp), queued on the lock a zkrecipes
// mutex of another session holds. Its line has the fields of the others
// that apply to a JVM seen from outside, and more:
//
//	curator scale recipe=mutex n=N queue_s=S rss_per_waiter_b=R threads_per_waiter=T drain_per_s=D server_bytes_per_waiter=B server_packets_per_waiter=P rss_b=X hwm_b=Y queued=Q drained=A stopped=none|queueing|draining secs=E
//
// queue_s is the time from the JVM's start of its threads until N lock
// nodes exist (the path's node count, polled every 10 ms). rss_per_waiter_b
// and threads_per_waiter are the growth of the JVM's VmRSS and Threads
// (/proc/PID/status) over that time, divided by N; no collection runs
// before the reading, so the RSS counts the garbage the JVM has not
// collected yet, as a container's memory limit does. rss_b is that VmRSS,
// hwm_b the VmHWM at the end. The server's bytes and packets are per lock
// node queued. At -curator-cap after the start the JVM is killed: stopped
// says in which phase, secs when (otherwise the time to the last release),
// queued how many nodes were queued and drained how many acquisitions were
// done; queue_s is then the time until the stop when it stopped queueing,
// and drain_per_s the rate of the acquisitions done when it stopped
// draining.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func main() {
	servers := flag.String("servers", "", "ZooKeeper servers, host:port,... (required)")
	ns := flag.String("n", "100,1000,10000", "numbers of waiters")
	recipes := flag.String("recipes", "mutex,read,write,semmutex,semaphore,leader,multilock,held", "what to measure")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound of each step")
	curatorCP := flag.String("curator-cp", "", "class path of Curator's jars and CuratorScale (recipe curator)")
	curatorCap := flag.Duration("curator-cap", 3*time.Minute, "time after which the curator step's JVM is killed")
	flag.StringVar(&heapProfile, "heapprofile", "", "write a heap profile of each step's waiters to this file (overwritten by each step)")
	flag.Parse()
	if *servers == "" {
		log.Fatal("scale: -servers is required")
	}
	if strings.Contains(","+*recipes+",", ",curator,") && *curatorCP == "" {
		log.Fatal("scale: recipe curator needs -curator-cp")
	}
	var steps []int
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 2 {
			log.Fatalf("scale: bad -n %q", f)
		}
		steps = append(steps, n)
	}
	warmGoroutines(4 * slices.Max(steps))
	failed := false
	for _, r := range strings.Split(*recipes, ",") {
		for _, n := range steps {
			var line string
			var err error
			if r == "curator" {
				line, err = curator(strings.Split(*servers, ","), n, *curatorCP, *curatorCap, *timeout)
			} else {
				line, err = step(strings.Split(*servers, ","), r, n, *timeout)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "scale: %s n=%d: %v\n", r, n, err)
				failed = true
				continue
			}
			fmt.Println(line)
		}
	}
	if failed {
		os.Exit(1)
	}
}

// warmGoroutines starts n goroutines and ends them: their descriptors
// stay with the runtime for reuse.
func warmGoroutines(n int) {
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); <-gate }()
	}
	close(gate)
	wg.Wait()
}

// lock is one contender's handle: acquire, then release what it took.
type lock interface {
	acquire(ctx context.Context) error
	release(ctx context.Context) error
}

// contenders returns, for recipe on session s at path, the holder's lock
// (on session h) and a function making the i-th waiter's lock, and the
// number of watches the waiters set when all of them wait.
func contenders(recipe string, h, s *conn.Session, path string, n int) (holder lock, waiter func(i int) (lock, error), watches int, err error) {
	switch recipe {
	case "mutex":
		hm, err1 := mutex.New(h, path)
		m, err2 := mutex.New(s, path)
		return mutexLock{hm}, func(int) (lock, error) { return mutexLock{m}, nil }, n, errors.Join(err1, err2)
	case "read", "write":
		hr, err1 := rwlock.New(h, path)
		rw, err2 := rwlock.New(s, path)
		k := rw.WriteLock()
		if recipe == "read" {
			k = rw.ReadLock()
		}
		return rwLock{hr.WriteLock()}, func(int) (lock, error) { return rwLock{k}, nil }, n, errors.Join(err1, err2)
	case "semmutex":
		hm, err := semaphoremutex.New(h, path)
		return semMutex{hm}, func(int) (lock, error) {
			m, err := semaphoremutex.New(s, path)
			return semMutex{m}, err
		}, n, err
	case "semaphore":
		hs, err1 := semaphoremutex.NewSemaphore(h, path, 1)
		sem, err2 := semaphoremutex.NewSemaphore(s, path, 1)
		return &semLease{s: hs}, func(int) (lock, error) { return &semLease{s: sem}, nil }, n - 1, errors.Join(err1, err2)
	case "leader":
		he, err := leader.New(h, path, "holder")
		return election{he}, func(i int) (lock, error) {
			e, err := leader.New(s, path, "w"+strconv.Itoa(i))
			return election{e}, err
		}, n, err
	case "multilock":
		ha, err1 := mutex.New(h, path+"/a")
		a, err2 := mutex.New(s, path+"/a")
		b, err3 := mutex.New(s, path+"/b")
		return mutexLock{ha}, func(int) (lock, error) {
			m, err := multilock.New(a, b)
			return multi{m}, err
		}, n, errors.Join(err1, err2, err3)
	}
	return nil, nil, 0, fmt.Errorf("unknown recipe %q", recipe)
}

type mutexLock struct{ m *mutex.InterProcessMutex }

func (l mutexLock) acquire(ctx context.Context) error { _, err := l.m.Acquire(ctx); return err }
func (l mutexLock) release(ctx context.Context) error { return l.m.Release(ctx) }

type rwLock struct{ k *rwlock.Lock }

func (l rwLock) acquire(ctx context.Context) error { _, err := l.k.Acquire(ctx); return err }
func (l rwLock) release(ctx context.Context) error { return l.k.Release(ctx) }

type semMutex struct{ m *semaphoremutex.Mutex }

func (l semMutex) acquire(ctx context.Context) error { _, err := l.m.Acquire(ctx); return err }
func (l semMutex) release(ctx context.Context) error { return l.m.Release(ctx) }

// semLease is one acquire of a shared Semaphore; not shared itself.
type semLease struct {
	s *semaphoremutex.Semaphore
	l *conn.Lease
}

func (l *semLease) acquire(ctx context.Context) (err error) { l.l, err = l.s.Acquire(ctx); return err }
func (l *semLease) release(ctx context.Context) error       { return l.s.ReturnLease(ctx, l.l) }

type election struct{ e *leader.Election }

func (l election) acquire(ctx context.Context) error { _, err := l.e.Campaign(ctx); return err }
func (l election) release(ctx context.Context) error { return l.e.Resign(ctx) }

type multi struct{ m *multilock.MultiLock }

func (l multi) acquire(ctx context.Context) error { _, err := l.m.Acquire(ctx); return err }
func (l multi) release(ctx context.Context) error { return l.m.Release(ctx) }

// heapProfile is the -heapprofile file.
var heapProfile string

func writeHeapProfile() {
	if heapProfile == "" {
		return
	}
	f, err := os.Create(heapProfile)
	if err == nil {
		err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
	}
	if err != nil {
		log.Printf("scale: heap profile: %v", err)
	}
}

// memory is the live heap and the goroutine stacks, after two collections,
// and the number of goroutines.
func memory() (heap, stack uint64, goroutines int) {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.StackInuse, runtime.NumGoroutine()
}

func step(servers []string, recipe string, n int, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	px, err := newProxy(servers[0])
	if err != nil {
		return "", err
	}
	defer px.close()
	h, err := conn.Connect(ctx, servers, conn.WithSessionTimeout(30*time.Second))
	if err != nil {
		return "", err
	}
	defer h.Close()
	s, err := conn.Connect(ctx, []string{px.addr}, conn.WithSessionTimeout(30*time.Second))
	if err != nil {
		return "", err
	}
	defer s.Close()
	path := fmt.Sprintf("/zkrecipes-scale/%s-%d-%d", recipe, n, time.Now().UnixNano())
	if recipe == "held" {
		return held(ctx, s, px, servers[0], path, n)
	}
	holder, waiter, want, err := contenders(recipe, h, s, path, n)
	if err != nil {
		return "", err
	}
	if err := holder.acquire(ctx); err != nil {
		return "", fmt.Errorf("holder: %w", err)
	}
	heap0, stack0, g0 := memory()
	bytes0, packets0 := px.sent.Load(), packets(ctx, servers[0])
	ws := make([]lock, n) // a waiter's handle counts in its cost
	for i := range ws {
		if ws[i], err = waiter(i); err != nil {
			return "", err
		}
	}
	watches0 := connlink.Of(s).Stats().WatchesSet
	start := time.Now()
	var done sync.WaitGroup
	var failures atomic.Int64
	var firstErr atomic.Value
	for _, w := range ws {
		done.Add(1)
		go func() {
			defer done.Done()
			err := w.acquire(ctx)
			if err == nil {
				err = w.release(ctx)
			}
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	for connlink.Of(s).Stats().WatchesSet-watches0 < int64(want) {
		if ctx.Err() != nil || failures.Load() > 0 {
			cancel()
			done.Wait()
			return "", fmt.Errorf("queueing: %d of %d waiting: %v (%v)", connlink.Of(s).Stats().WatchesSet-watches0, want, ctx.Err(), firstErr.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	queued := time.Since(start)
	bytes1, packets1 := px.sent.Load(), packets(ctx, servers[0])
	heap1, stack1, g1 := memory()
	writeHeapProfile()
	bytes2 := px.sent.Load()
	start = time.Now()
	if err := holder.release(ctx); err != nil {
		return "", fmt.Errorf("holder release: %w", err)
	}
	done.Wait()
	drain := time.Since(start)
	if f := failures.Load(); f > 0 {
		return "", fmt.Errorf("%d waiters failed: %v", f, firstErr.Load())
	}
	return line(recipe, n, queued, heap1-heap0, stack1-stack0, g1-g0, float64(n)/drain.Seconds(), bytes1-bytes0, packets1-packets0) +
		fmt.Sprintf(" drain_bytes_per_waiter=%.0f", float64(px.sent.Load()-bytes2)/float64(n)), nil
}

// held acquires n distinct mutexes on s one after the other and holds
// them all.
func held(ctx context.Context, s *conn.Session, px *proxy, server, path string, n int) (string, error) {
	ms := make([]*mutex.InterProcessMutex, n)
	for i := range ms {
		var err error
		if ms[i], err = mutex.New(s, fmt.Sprintf("%s/%d", path, i)); err != nil {
			return "", err
		}
	}
	heap0, stack0, g0 := memory()
	bytes0, packets0 := px.sent.Load(), packets(ctx, server)
	start := time.Now()
	for _, m := range ms {
		if _, err := m.Acquire(ctx); err != nil {
			return "", err
		}
	}
	took := time.Since(start)
	bytes1, packets1 := px.sent.Load(), packets(ctx, server)
	heap1, stack1, g1 := memory()
	for _, m := range ms {
		if err := m.Release(ctx); err != nil {
			return "", err
		}
	}
	return line("held", n, took, heap1-heap0, stack1-stack0, g1-g0, float64(n)/took.Seconds(), bytes1-bytes0, packets1-packets0), nil
}

func line(recipe string, n int, queued time.Duration, heap, stack uint64, goroutines int, rate float64, bytes, packets int64) string {
	per := func(v float64) float64 { return v / float64(n) }
	return fmt.Sprintf("zkrecipes scale recipe=%s n=%d queue_s=%.3f heap_per_waiter_b=%.0f stack_per_waiter_b=%.0f goroutines_per_waiter=%.2f drain_per_s=%.0f server_bytes_per_waiter=%.0f server_packets_per_waiter=%.1f",
		recipe, n, queued.Seconds(), per(float64(int64(heap))), per(float64(int64(stack))), per(float64(goroutines)), rate, per(float64(bytes)), per(float64(packets)))
}

// packets is the server's zk_packets_sent, -1 if mntr does not answer.
func packets(ctx context.Context, server string) int64 {
	m, err := zktest.MntrAt(ctx, server)
	if err != nil {
		return -1
	}
	v, err := strconv.ParseInt(m["zk_packets_sent"], 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// proxy forwards connections to one server and counts the bytes the
// server sends.
type proxy struct {
	ln   net.Listener
	addr string
	sent atomic.Int64
	wg   sync.WaitGroup
	mu   sync.Mutex
	cs   []net.Conn
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, addr: ln.Addr().String()}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.cs = append(p.cs, c, d)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(d, c); d.Close() }()
			go func() { defer p.wg.Done(); io.Copy(counter{c, &p.sent}, d); c.Close() }()
		}
	}()
	return p, nil
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.cs {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

type counter struct {
	w io.Writer
	n *atomic.Int64
}

func (c counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
