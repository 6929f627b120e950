package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// locker is what every lock of the module offers.
type locker interface {
	Acquire(ctx context.Context) (*conn.Lease, error)
	Release(ctx context.Context) error
}

// subject is one lock type under measurement.
type subject struct {
	name   string
	note   string // how it wakes its waiters, for the summary
	legend string // what its waiters watch, for the chart
	// lock returns contender i's handle on the lock at path over session s
	// (i = 0 is the first holder, 1..N the waiters) and whether it is
	// exclusive (a writer) or shared with other readers.
	lock func(s *conn.Session, path string, i int) (l locker, exclusive bool, err error)
}

// figures are what draining one queue of waiters cost.
type figures struct {
	subject string
	waiters int
	// packets per handoff: the server's zk_packets_received and
	// zk_packets_sent (mntr) over the drain, divided by the acquisitions;
	// NaN when the server does not answer mntr.
	packets float64
	// requests and watches per acquire: every session's Stats over the
	// drain, divided by the acquisitions.
	requests, watches float64
	// p50 and p99 of the handoffs: a holder starts its release → the next
	// holder's Acquire returns.
	p50, p99 time.Duration
	elapsed  time.Duration // of the drain
}

// sessionTimeout asked of the server, which clamps it to its limits. Long
// sessions ping rarely.
const sessionTimeout = 40 * time.Second

// connectTimeout bounds the wait for each session.
const connectTimeout = 10 * time.Second

// queueTimeout bounds the wait for one waiter to queue up.
const queueTimeout = 30 * time.Second

// run measures every subject for every N of cfg on servers, prints the
// table to out and draws the chart. prog may be nil.
func run(ctx context.Context, cfg config, servers []string, out io.Writer, prog *progress) error {
	subjects := subjects()
	maxN := slices.Max(cfg.waiters)
	fmt.Fprintf(out, "Herd effect: one holder, N waiters queued behind it (one ZooKeeper session each),\n")
	fmt.Fprintf(out, "then the queue drains, every waiter holding the lock for %v. ZooKeeper: %s\n", cfg.hold, strings.Join(servers, ","))
	fmt.Fprintf(out, "Per handoff: server packets (mntr, in+out) while the queued waiters drain: a release, its\n")
	fmt.Fprintf(out, "notifications and the next holder's entry, not a waiter's queueing (README's table counts the\n")
	fmt.Fprintf(out, "whole acquire-release cycle, hence more). Per acquire: client requests, watch events.\n\n")

	total := 0
	for _, n := range cfg.waiters {
		total += 2 * n * len(subjects) // queued, then done
	}
	total += maxN + 1 // sessions
	prog.start(total)
	defer prog.finish()

	prog.stage(fmt.Sprintf("connecting %d sessions", maxN+1))
	sessions, err := connectAll(ctx, servers, maxN+1, prog)
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	if err != nil {
		return err
	}

	root := fmt.Sprintf("/zkrecipes-examples/herd-%x", time.Now().UnixNano())
	prog.clear()
	printHeader(out)
	prog.redraw()
	var all []figures
	for _, n := range cfg.waiters {
		for _, sub := range subjects {
			prog.stage(fmt.Sprintf("%s, N=%d", sub.name, n))
			path := fmt.Sprintf("%s/%s-%d", root, sub.name, n)
			f, err := measure(ctx, sub, sessions[:n+1], servers, path, cfg.hold, prog)
			if err != nil {
				prog.clear()
				return fmt.Errorf("%s with %d waiters: %w", sub.name, n, err)
			}
			all = append(all, f)
			prog.clear()
			printRow(out, f, sub.name == subjects[0].name)
			prog.redraw()
		}
	}
	prog.finish()
	printSummary(out, subjects, all)
	if cfg.out != "" {
		if err := drawChart(cfg.out, subjects, all, cfg.hold); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		fmt.Fprintf(out, "chart: %s\n", cfg.out)
	}
	return nil
}

// connectAll opens n sessions, a few at a time, and gives up at the first
// that fails.
func connectAll(ctx context.Context, servers []string, n int, prog *progress) ([]*conn.Session, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sessions := make([]*conn.Session, n)
	var (
		sem      = make(chan struct{}, 8)
		wg       sync.WaitGroup
		mu       sync.Mutex // guards firstErr
		firstErr error
	)
	for i := range sessions {
		sem <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, ccancel := context.WithTimeout(ctx, connectTimeout)
			s, err := conn.Connect(cctx, servers, conn.WithSessionTimeout(sessionTimeout))
			ccancel()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				cancel()
				return
			}
			sessions[i] = s
			prog.add(1)
		}()
	}
	wg.Wait()
	live := make([]*conn.Session, 0, n)
	for _, s := range sessions {
		if s != nil {
			live = append(live, s)
		}
	}
	if firstErr != nil {
		return live, fmt.Errorf("%d of %d sessions connected, then: %w\n"+
			"A ZooKeeper server takes at most maxClientCnxns connections from one client address (60 by default;\n"+
			"zktest's servers take any number). Measure fewer waiters (-n), or use a server with maxClientCnxns=0",
			len(live), n, firstErr)
	}
	return live, nil
}

// measure queues len(sessions)-1 waiters behind a holder on path, drains the
// queue and returns what it cost. It fails if two contenders that exclude
// each other were ever inside at once.
func measure(ctx context.Context, sub subject, sessions []*conn.Session, servers []string, path string, hold time.Duration, prog *progress) (figures, error) {
	n := len(sessions) - 1
	holder, _, err := sub.lock(sessions[0], path, 0)
	if err != nil {
		return figures{}, err
	}
	if _, err := holder.Acquire(ctx); err != nil {
		return figures{}, fmt.Errorf("holder: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg          sync.WaitGroup
		room        room
		lastRelease atomic.Int64 // unix nanoseconds: when the latest release began
		mu          sync.Mutex   // guards latencies and errs
		latencies   []time.Duration
		errs        []error
	)
	report := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel()
	}
	stop := func(err error) (figures, error) {
		cancel()
		wg.Wait()
		return figures{}, errors.Join(append([]error{err}, errs...)...)
	}

	for i := 1; i <= n; i++ {
		l, exclusive, err := sub.lock(sessions[i], path, i)
		if err != nil {
			return stop(err)
		}
		before := demo.WatchRequests(sessions[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Acquire(ctx); err != nil {
				report(fmt.Errorf("waiter %d: %w", i, err))
				return
			}
			got := time.Now()
			handoff := got.Sub(time.Unix(0, lastRelease.Load()))
			if err := room.enter(exclusive); err != nil {
				report(fmt.Errorf("waiter %d: %w", i, err))
			}
			time.Sleep(hold) // the critical section's work
			room.leave(exclusive)
			mu.Lock()
			latencies = append(latencies, handoff)
			mu.Unlock()
			lastRelease.Store(time.Now().UnixNano())
			if err := l.Release(ctx); err != nil {
				report(fmt.Errorf("waiter %d: release: %w", i, err))
			}
			prog.add(1)
		}()
		// Queued: it found the lock taken and set a watch.
		if err := demo.WaitFor(ctx, queueTimeout, func() bool { return demo.WatchRequests(sessions[i]) > before }); err != nil {
			return stop(fmt.Errorf("waiter %d did not queue: %w", i, err))
		}
		prog.add(1)
	}

	statsBefore := sumStats(sessions)
	packetsBefore, mntrErr := packets(ctx, servers)
	begin := time.Now()
	lastRelease.Store(begin.UnixNano())
	if err := holder.Release(ctx); err != nil {
		return stop(fmt.Errorf("holder: release: %w", err))
	}
	wg.Wait()
	elapsed := time.Since(begin)
	d := sumStats(sessions).Sub(statsBefore)
	packetsAfter, err := packets(ctx, servers)
	if mntrErr == nil {
		mntrErr = err
	}
	if err := errors.Join(errs...); err != nil {
		return figures{}, err
	}

	slices.Sort(latencies)
	f := figures{
		subject:  sub.name,
		waiters:  n,
		packets:  math.NaN(),
		requests: float64(d.TotalRequests()) / float64(n),
		watches:  float64(d.WatchEvents) / float64(n),
		p50:      percentile(latencies, 50),
		p99:      percentile(latencies, 99),
		elapsed:  elapsed,
	}
	if mntrErr == nil {
		f.packets = float64(packetsAfter-packetsBefore) / float64(n)
	}
	return f, nil
}

// room checks mutual exclusion as the holders see it: a writer (exclusive)
// alone, readers together.
type room struct {
	mu      sync.Mutex // guards the fields below
	writers int
	readers int
}

func (r *room) enter(exclusive bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if exclusive {
		r.writers++
	} else {
		r.readers++
	}
	if r.writers > 1 || (r.writers == 1 && r.readers > 0) {
		return fmt.Errorf("exclusion violated: %d writers and %d readers inside at once", r.writers, r.readers)
	}
	return nil
}

func (r *room) leave(exclusive bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if exclusive {
		r.writers--
	} else {
		r.readers--
	}
}

// percentile p of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100 // ceil(len·p/100)
	return sorted[max(i, 1)-1]
}

// sumStats adds up the Stats of sessions.
func sumStats(sessions []*conn.Session) connlink.Stats {
	sum := connlink.Stats{Requests: map[string]int64{}}
	for _, s := range sessions {
		st := connlink.Of(s).Stats()
		sum.WatchEvents += st.WatchEvents
		for op, v := range st.Requests {
			sum.Requests[op] += v
		}
	}
	return sum
}

// packets sums zk_packets_received and zk_packets_sent over servers.
func packets(ctx context.Context, servers []string) (int64, error) {
	var sum int64
	for _, s := range servers {
		m, err := zktest.MntrAt(ctx, s)
		if err != nil {
			return 0, err
		}
		for _, k := range []string{"zk_packets_received", "zk_packets_sent"} {
			v, err := strconv.ParseInt(m[k], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("mntr on %s: %s=%q", s, k, m[k])
			}
			sum += v
		}
	}
	return sum, nil
}
