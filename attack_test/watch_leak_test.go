package attack_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// watchesUnder lists the watched paths (wchp on server i) under prefix.
func watchesUnder(c *zktest.Cluster, i int, prefix string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := c.FourLetter(ctx, i, "wchp")
	if err != nil {
		return []string{"wchp: " + err.Error()}
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if p := strings.TrimSpace(l); p == prefix || strings.HasPrefix(p, prefix+"/") {
			got = append(got, p)
		}
	}
	return got
}

// TestProbe_NoWatchLeftByTimedOutWaiter checks conn/doc.go: "A watch nobody
// waits on any more is removed from the server. The recipes tell the epoch
// when a waiter gives up" and the BRIEF's "No orphan node, watch or
// goroutine after cancel/timeout", for a waiter of every recipe whose ctx
// deadline ends while another session holds: once Acquire has returned, no
// node of the waiter is left and the server lists no watch under the path.
// semaphore-2 and semaphoremutex/doc.go: "A waiter that gives up removes
// its watches from the server" (its watches on N lease nodes).
func TestProbe_NoWatchLeftByTimedOutWaiter(t *testing.T) {
	c := zktest.New(t)
	sh := session(t, c.Servers()) // holder, never arms Lost
	sw := session(t, c.Servers()) // waiter
	zc := raw(t, c)
	type pair struct {
		hold func(ctx context.Context) error // takes the lock in sh
		wait func(ctx context.Context) error // waits in sw
	}
	mk := map[string]func(path string) pair{
		"mutex": func(path string) pair {
			h, _ := mutex.New(sh, path)
			w, _ := mutex.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		},
		"rwlock-read-behind-write": func(path string) pair {
			h, _ := rwlock.New(sh, path)
			w, _ := rwlock.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.WriteLock().Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.ReadLock().Acquire(ctx); return err }}
		},
		"rwlock-write-behind-read": func(path string) pair {
			h, _ := rwlock.New(sh, path)
			w, _ := rwlock.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.ReadLock().Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.WriteLock().Acquire(ctx); return err }}
		},
		"semaphoremutex": func(path string) pair {
			h, _ := semaphoremutex.New(sh, path)
			w, _ := semaphoremutex.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		},
		"semaphore-2": func(path string) pair {
			h, _ := semaphoremutex.NewSemaphore(sh, path, 2)
			w, _ := semaphoremutex.NewSemaphore(sw, path, 2)
			return pair{func(ctx context.Context) error {
				if _, err := h.Acquire(ctx); err != nil {
					return err
				}
				_, err := h.Acquire(ctx)
				return err
			}, func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		},
		"exclusive": func(path string) pair {
			h, _ := exclusive.New(sh, path)
			w, _ := exclusive.New(sw, path)
			return pair{func(ctx context.Context) error { _, err := h.Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := w.Acquire(ctx); return err }}
		},
		"leader": func(path string) pair {
			h, _ := leader.New(sh, path, "h")
			w, _ := leader.New(sw, path, "w")
			return pair{func(ctx context.Context) error { _, err := h.Campaign(ctx); return err },
				func(ctx context.Context) error { _, err := w.Campaign(ctx); return err }}
		},
		"multilock": func(path string) pair {
			h, _ := mutex.New(sh, path+"/b")
			a, _ := mutex.New(sw, path+"/a")
			b, _ := mutex.New(sw, path+"/b")
			m, _ := multilock.New(b, a)
			return pair{func(ctx context.Context) error { _, err := h.Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := m.Acquire(ctx); return err }}
		},
	}
	for name, f := range mk {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := c.Root() + "/watch-leak-" + name
			p := f(path)
			if err := p.hold(ctx); err != nil {
				t.Fatal(err)
			}
			before := countNodes(zc, path)
			wctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
			start := time.Now()
			err := p.wait(wctx)
			cancel()
			if took := time.Since(start); took > 800*time.Millisecond+250*time.Millisecond {
				t.Errorf("waiter returned %v after its ctx began (deadline 800 ms)", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiter: %v, want DeadlineExceeded", err)
			}
			end := time.Now().Add(3 * time.Second)
			var ws []string
			var n int
			for {
				ws, n = watchesUnder(c, 0, path), countNodes(zc, path)
				if (len(ws) == 0 && n == before) || time.Now().After(end) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(ws) != 0 {
				t.Errorf("watches left on the server 3 s after the waiter gave up: %v", ws)
			}
			if n != before {
				t.Errorf("ephemeral nodes under %s: %d before the waiter, %d 3 s after it gave up", path, before, n)
			}
		})
	}
}

// countNodes counts the ephemeral nodes under path (lock nodes; the
// container parents the recipes create are the server's to remove).
func countNodes(zc *zk.Conn, path string) int {
	n := 0
	for _, ch := range children(zc, path) {
		p := path + "/" + ch
		if _, st, err := zc.Get(p); err == nil && st.EphemeralOwner != 0 {
			n++
		}
		n += countNodes(zc, p)
	}
	return n
}
