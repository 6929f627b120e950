package locktest

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// HerdFigures is what draining a queue of waiters cost, counted on the
// clients over every contender's session (connlink.Session.Stats), divided by
// the number of acquires.
type HerdFigures struct {
	Waiters  int
	Hold     time.Duration
	Acquires int
	Elapsed  time.Duration
	// Requests per acquire, by operation (metrics.Op* names); only the
	// operations that were used.
	Requests map[string]float64
	// TotalRequests per acquire.
	TotalRequests float64
	// WatchEvents per acquire: watch notifications the servers sent.
	WatchEvents float64
	// ServerPacketsReceived and ServerPacketsSent per acquire, from the
	// servers' `mntr` (zk_packets_received, zk_packets_sent, summed over
	// the servers, pings included); -1 when mntr is not available. Only
	// meaningful when nothing else uses the cluster meanwhile.
	ServerPacketsReceived, ServerPacketsSent float64
}

func (h HerdFigures) String() string {
	ops := make([]string, 0, len(h.Requests))
	for op, v := range h.Requests {
		ops = append(ops, fmt.Sprintf("%s=%.2f", op, v))
	}
	sort.Strings(ops)
	return fmt.Sprintf("%d waiters, hold %v: per acquire %.2f requests (%s), %.2f watch events; server packets in/out %.1f/%.1f; %d acquires in %v",
		h.Waiters, h.Hold, h.TotalRequests, strings.Join(ops, " "), h.WatchEvents,
		h.ServerPacketsReceived, h.ServerPacketsSent, h.Acquires, h.Elapsed.Round(time.Millisecond))
}

// MeasureHerd measures the herd effect of a lock type: one holder and
// waiters waiters, each on its own session, on a fresh path of c. Once
// every waiter is seen queued, the holder releases and the waiters drain,
// each acquiring once, holding the lock for hold (its critical section: the
// time the others have to settle back into waiting; with an empty one, a
// waiter woken by a release may find the lock free again before it has
// watched) and releasing. The figures cover everything
// from the holder's release to the last waiter's release, over all
// sessions. It also fails t if two waiters were ever inside at once.
//
// This is the hook for the herd comparison: call it with each lock type
// (exclusive, mutex, ...) and the same numbers of waiters.
func MeasureHerd(t *testing.T, c *zktest.Cluster, newLock NewLockFunc, waiters int, hold time.Duration) HerdFigures {
	t.Helper()
	path := UniquePath(c, fmt.Sprintf("herd-%d", waiters))
	sessions := ConnectN(t, c.Servers(), 8*time.Second, waiters+1)
	holder := newLock(t, sessions[0], path)
	mustAcquire(t, holder, 10*time.Second)

	ctx := Ctx(t, 2*time.Minute)
	var (
		wg      sync.WaitGroup
		inside  atomic.Int32
		mu      sync.Mutex // guards errs and history
		errs    []error
		history []Interval
	)
	for i := 1; i <= waiters; i++ {
		lk := newLock(t, sessions[i], path)
		before := watchesSet(sessions[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := lk.Acquire(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("waiter %d: acquire: %w", i, err))
				mu.Unlock()
				return
			}
			start := time.Now()
			n := inside.Add(1)
			time.Sleep(hold) // the critical section's work, not synchronisation
			inside.Add(-1)
			end := time.Now()
			err := lk.Release(ctx)
			mu.Lock()
			defer mu.Unlock()
			history = append(history, Interval{Who: i, Start: start, End: end})
			if n > 1 {
				errs = append(errs, fmt.Errorf("waiter %d got in with %d others inside", i, n-1))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("waiter %d: release: %w", i, err))
			}
		}()
		require.True(t, WaitQueued(t, sessions[i], before, 10*time.Second), "waiter %d queued", i)
	}

	before := sumStats(sessions)
	inBefore, outBefore, mntrErr := serverPackets(c)
	begin := time.Now()
	mustRelease(t, holder, 10*time.Second)
	wg.Wait()
	elapsed := time.Since(begin)
	d := sumStats(sessions).Sub(before)
	inAfter, outAfter, err := serverPackets(c)
	if mntrErr == nil {
		mntrErr = err
	}

	for _, err := range errs {
		t.Error(err)
	}
	for _, p := range Overlaps(history) {
		t.Errorf("locktest: herd: waiters %d and %d held the lock at once", p[0].Who, p[1].Who)
	}
	n := float64(waiters)
	h := HerdFigures{Waiters: waiters, Hold: hold, Acquires: waiters, Elapsed: elapsed, Requests: map[string]float64{},
		TotalRequests: float64(d.TotalRequests()) / n, WatchEvents: float64(d.WatchEvents) / n}
	for op, v := range d.Requests {
		if v != 0 {
			h.Requests[op] = float64(v) / n
		}
	}
	h.ServerPacketsReceived, h.ServerPacketsSent = -1, -1
	if mntrErr == nil {
		h.ServerPacketsReceived = float64(inAfter-inBefore) / n
		h.ServerPacketsSent = float64(outAfter-outBefore) / n
	} else {
		t.Logf("locktest: herd: no server packet counts: %v", mntrErr)
	}
	return h
}

// serverPackets sums zk_packets_received and zk_packets_sent over c's
// servers.
func serverPackets(c *zktest.Cluster) (in, out int64, err error) {
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	for i := range c.Servers() {
		m, err := c.Mntr(ctx, i)
		if err != nil {
			return 0, 0, err
		}
		r, err1 := strconv.ParseInt(m["zk_packets_received"], 10, 64)
		s, err2 := strconv.ParseInt(m["zk_packets_sent"], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, fmt.Errorf("mntr on server %d: %w", i, err)
		}
		in, out = in+r, out+s
	}
	return in, out, nil
}

// sumStats adds up the Stats of every session.
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
