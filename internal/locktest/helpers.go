package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Connect opens a session on servers with the given session timeout (and
// opts) and closes it in t.Cleanup. It fails t if no session comes within
// 30 s.
func Connect(t testing.TB, servers []string, sessionTimeout time.Duration, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := conn.Connect(ctx, servers, append([]conn.Option{conn.WithSessionTimeout(sessionTimeout)}, opts...)...)
	if err != nil {
		t.Fatalf("locktest: connect to %v: %v", servers, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ConnectN opens n sessions at once, as Connect does.
func ConnectN(t testing.TB, servers []string, sessionTimeout time.Duration, n int) []*conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]*conn.Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = conn.Connect(ctx, servers, conn.WithSessionTimeout(sessionTimeout))
		}()
	}
	wg.Wait()
	for _, s := range out {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("locktest: connect %d sessions to %v: %v", n, servers, err)
	}
	return out
}

// UniquePath returns a fresh path under the cluster's Root for one test.
func UniquePath(c *zktest.Cluster, name string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%s-%s", c.Root(), name, hex.EncodeToString(b[:]))
}

// Ctx returns a context ending after d, cancelled in t.Cleanup.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond every 10ms until it holds, and fails t (Errorf) and
// returns false if it does not within timeout. For waiting on observable
// state (node counts, request counts), never as a bare sleep.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("locktest: timed out after %v waiting for %s", timeout, what)
			return false
		}
		<-tick.C
	}
	return true
}

// Ephemerals returns every ephemeral node under path (path included), with
// the session that owns it. A missing path gives an empty map.
func Ephemerals(ctx context.Context, s *conn.Session, path string) (map[string]int64, error) {
	ep, err := connlink.Of(s).Epoch(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64)
	return out, Walk(ctx, ep, path, func(p string, st *zk.Stat) {
		if st.EphemeralOwner != 0 {
			out[p] = st.EphemeralOwner
		}
	})
}

// Walk calls visit for root and every node under it, parents first; nodes
// deleted meanwhile are skipped.
func Walk(ctx context.Context, ep *conn.Epoch, root string, visit func(p string, st *zk.Stat)) error {
	var walk func(p string) error
	walk = func(p string) error {
		ok, st, err := connlink.Of(ep).Exists(ctx, p)
		if err != nil || !ok {
			return err
		}
		visit(p, st)
		if st.NumChildren == 0 {
			return nil
		}
		kids, _, err := connlink.Of(ep).Children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(zkpath.Join(p, k)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}

// OwnedBy returns the nodes of m (from Ephemerals) owned by session id.
func OwnedBy(m map[string]int64, id int64) []string {
	var out []string
	for p, o := range m {
		if o == id {
			out = append(out, p)
		}
	}
	return out
}

// Exists reports whether node exists, failing t on an error.
func Exists(t testing.TB, s *conn.Session, node string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := connlink.Of(s).Epoch(ctx)
	if err == nil {
		var ok bool
		ok, _, err = connlink.Of(ep).Exists(ctx, node)
		if err == nil {
			return ok
		}
	}
	t.Errorf("locktest: exists %s: %v", node, err)
	return false
}

// ephemeralsOrFail is Ephemerals bounded by 10 s, failing t on an error.
func ephemeralsOrFail(t testing.TB, s *conn.Session, path string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := Ephemerals(ctx, s, path)
	if err != nil {
		t.Errorf("locktest: listing ephemeral nodes under %s: %v", path, err)
	}
	return m
}

// watchesSet is how many watches (GetW, ExistsW) the server has
// confirmed to s: counted on the answer, so the watch is in place.
func watchesSet(s *conn.Session) int64 { return connlink.Of(s).Stats().WatchesSet }

// WaitQueued waits until the server has confirmed more watches to session
// s than the before it had (see watchesSet): the sign that a contender
// found the lock taken and is waiting for a change. Every recipe of this
// module watches before it waits.
func WaitQueued(t testing.TB, s *conn.Session, before int64, timeout time.Duration) bool {
	t.Helper()
	return WaitFor(t, timeout, "a contender to queue (a watch set)", func() bool {
		return watchesSet(s) > before
	})
}

// WaitState waits on sub for a transition to one of want, passing over any
// other, and returns it; it fails t (Errorf) and returns false after
// timeout.
func WaitState(t testing.TB, sub <-chan conn.Event, timeout time.Duration, want ...conn.State) (conn.Event, bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-sub:
			if !ok {
				t.Errorf("locktest: waiting for %v: the subscription ended", want)
				return ev, false
			}
			for _, w := range want {
				if ev.State == w {
					return ev, true
				}
			}
		case <-deadline:
			t.Errorf("locktest: waiting for %v: none within %v", want, timeout)
			return conn.Event{}, false
		}
	}
}

// result is what a background Acquire came to.
type result struct {
	lease *conn.Lease
	err   error
	at    time.Time
}

// acquireAsync runs lk.Acquire(ctx) on a goroutine; the channel gets one
// result.
func acquireAsync(ctx context.Context, lk Locker) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := lk.Acquire(ctx)
		ch <- result{lease: l, err: err, at: time.Now()}
	}()
	return ch
}

// await waits for a background result up to timeout; ok is false (and t
// has failed) if none came.
func await(t testing.TB, ch <-chan result, timeout time.Duration, what string) (result, bool) {
	t.Helper()
	select {
	case r := <-ch:
		return r, true
	case <-time.After(timeout):
		t.Errorf("locktest: %s: no answer within %v", what, timeout)
		return result{}, false
	}
}

// mustAcquire acquires lk within timeout or fails t.
func mustAcquire(t testing.TB, lk Locker, timeout time.Duration) *conn.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l, err := lk.Acquire(ctx)
	if err != nil {
		t.Fatalf("locktest: acquire %s: %v", lk.Path(), err)
	}
	if l == nil {
		t.Fatalf("locktest: acquire %s: nil lease without an error", lk.Path())
	}
	return l
}

// mustRelease releases lk within timeout or fails t.
func mustRelease(t testing.TB, lk Locker, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := lk.Release(ctx); err != nil {
		t.Errorf("locktest: release %s: %v", lk.Path(), err)
	}
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ctxFor is context.WithTimeout on the background context.
func ctxFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// SetACL sets node's ACL with a go-zookeeper connection of its own (conn
// has no SetACL: recipes never change ACLs), failing t on error.
func SetACL(t testing.TB, servers []string, node string, acl []zk.ACL) {
	t.Helper()
	zc, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("connect to set the ACL of %s: %v", node, err)
	}
	defer zc.Close()
	if _, err := zc.SetACL(node, acl, -1); err != nil {
		t.Fatalf("set the ACL of %s: %v", node, err)
	}
}

// quiet keeps go-zookeeper's own logging out of the test output.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// DeleteTree deletes path and everything under it, children first, in
// batches of 200 deletes per transaction; a path that is not there is no
// error.
func DeleteTree(ctx context.Context, ep *conn.Epoch, path string) error {
	kids, _, err := connlink.Of(ep).Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	var batch []any
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := connlink.Of(ep).Multi(ctx, batch...)
		batch = batch[:0]
		return err
	}
	for _, k := range kids {
		p := zkpath.Join(path, k)
		ok, st, err := connlink.Of(ep).Exists(ctx, p)
		if err != nil {
			return err
		}
		if ok && st.NumChildren > 0 {
			if err := DeleteTree(ctx, ep, p); err != nil {
				return err
			}
			continue
		}
		batch = append(batch, &zk.DeleteRequest{Path: p, Version: -1})
		if len(batch) == 200 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := connlink.Of(ep).Delete(ctx, path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}
