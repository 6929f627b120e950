package attack_test

import (
	"context"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// seqOf returns the sequence number at the end of a lock node's name.
func seqOf(node string) int {
	i := strings.LastIndexByte(node, '-')
	n, _ := strconv.Atoi(node[i+1:])
	return n
}

// sortedBySeq lists path's children sorted by sequence number.
func sortedBySeq(zc *zk.Conn, path string) []string {
	ch := children(zc, path)
	sort.Slice(ch, func(i, j int) bool { return seqOf(ch[i]) < seqOf(ch[j]) })
	return ch
}

// round4Locker makes a fresh handle of recipe on path in s: each waiter of
// the drain test its own.
func round4Locker(t *testing.T, recipe string, s *conn.Session, path string, i int) simpleLocker {
	t.Helper()
	switch recipe {
	case "mutex":
		m, err := mutex.New(s, path)
		if err != nil {
			t.Fatal(err)
		}
		return m
	case "mutex-revocable":
		m, err := mutex.New(s, path, mutex.WithRevocable())
		if err != nil {
			t.Fatal(err)
		}
		return m
	case "rwlock-revocable":
		rw, err := rwlock.New(s, path, rwlock.WithRevocable())
		if err != nil {
			t.Fatal(err)
		}
		return rw.WriteLock()
	case "leader":
		e, err := leader.New(s, path, "p"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		return electionLocker{e}
	}
	t.Fatalf("recipe %q", recipe)
	return nil
}

// drainWaiter is one queued contender of the drain test.
type drainWaiter struct {
	sess   int
	node   string // the node it queued (children diff)
	cancel context.CancelFunc
	fate   string // "survivor", "cancelled", "deleted"
	// results
	lease    *conn.Lease
	err      error
	grantIdx int64 // set by the waiter's goroutine; read after it ended. Order of the grant among all grants (1-based), 0 if none
	overlap  string
	granted  atomic.Bool
}

// runDrain: holder H (session D) holds; n waiters, interleaved over the
// sessions ss, queue one after the other (each its own handle and
// goroutine); then, at once, a random third of them is cancelled (one
// cancel each, called from one loop), a bystander deletes a random sixth of
// the others' nodes, and H releases. Returns the waiters after every
// Acquire returned (or fails the test after 60 s naming the stuck ones).
func runDrain(t *testing.T, c *zktest.Cluster, recipe, path string, ss []*conn.Session, hs *conn.Session, n int, seed int64, concurrent bool) []*drainWaiter {
	t.Helper()
	ctx := ctxT(t, 120*time.Second)
	zc := raw(t, c)
	rng := rand.New(rand.NewSource(seed))
	h := gAcquire(ctx, round4Locker(t, recipe, hs, path, 1000))
	select {
	case <-h.got:
	case err := <-h.failed:
		t.Fatal(err)
	}
	var mu sync.Mutex
	holding := map[*drainWaiter]bool{}
	var grants atomic.Int64
	ws := make([]*drainWaiter, n)
	var wg sync.WaitGroup
	known := map[string]bool{}
	for _, ch := range children(zc, path) {
		known[ch] = true
	}
	for i := 0; i < n; i++ {
		w := &drainWaiter{sess: i % len(ss)}
		switch r := rng.Intn(6); {
		case r < 2:
			w.fate = "cancelled"
		case r == 2:
			w.fate = "deleted"
		default:
			w.fate = "survivor"
		}
		ws[i] = w
		wctx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		lk := round4Locker(t, recipe, ss[w.sess], path, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := lk.Acquire(wctx)
			if err != nil {
				w.err = err
				return
			}
			w.lease = l
			w.grantIdx = grants.Add(1)
			w.granted.Store(true)
			mu.Lock()
			for o := range holding {
				if o != w {
					w.overlap += o.node + " "
				}
			}
			excused := w.fate == "deleted" && recipe != "leader"
			if !excused {
				holding[w] = true
			}
			mu.Unlock()
			// hold for a moment, as a holder does
			select {
			case <-l.Lost():
			case <-time.After(2 * time.Millisecond):
			}
			mu.Lock()
			delete(holding, w)
			mu.Unlock()
			if err := lk.Release(context.WithoutCancel(ctx)); err != nil {
				w.err = err
			}
		}()
		// its node: the one new child
		waitFor(t, 10*time.Second, "waiter queued", func() bool {
			for _, ch := range children(zc, path) {
				if !known[ch] {
					known[ch] = true
					w.node = ch
					return true
				}
			}
			return false
		})
	}
	// At once: cancels, bystander deletes, release.
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		for _, w := range ws {
			if w.fate == "cancelled" {
				w.cancel()
			}
		}
	}()
	go func() {
		defer bg.Done()
		for _, w := range ws {
			if w.fate == "deleted" {
				_ = zc.Delete(path+"/"+w.node, -1)
			}
		}
	}()
	if !concurrent {
		bg.Wait()
	}
	if err := h.release(); err != nil {
		t.Fatal(err)
	}
	bg.Wait()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		var stuck []string
		for i, w := range ws {
			if !w.granted.Load() && w.fate != "cancelled" {
				stuck = append(stuck, strconv.Itoa(i)+":"+w.fate+":"+w.node)
			}
		}
		t.Fatalf("waiters stuck after 60 s (not cancelled, never granted): %v; nodes now %v", stuck, sortedBySeq(zc, path))
	}
	for _, w := range ws {
		w.cancel()
	}
	return ws
}
