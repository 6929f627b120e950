package recipes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// ownRevokeRecipe is one lock of TestWriteThroughOwnSession: open makes a
// handle on a session (sealed nodes, the default); waiter makes the handle
// queued behind the holder.
type ownRevokeRecipe struct {
	name   string
	open   func(s *conn.Session, path string) (hostileLock, error)
	waiter func(s *conn.Session, path string) (hostileLock, error)
}

func ownRevokeRecipes() []ownRevokeRecipe {
	openMutex := func(s *conn.Session, p string) (hostileLock, error) { return mutex.New(s, p) }
	openWrite := func(s *conn.Session, p string) (hostileLock, error) {
		rw, err := rwlock.New(s, p)
		if err != nil {
			return nil, err
		}
		return rw.WriteLock(), nil
	}
	openRead := func(s *conn.Session, p string) (hostileLock, error) {
		rw, err := rwlock.New(s, p)
		if err != nil {
			return nil, err
		}
		return rw.ReadLock(), nil
	}
	openSemMutex := func(s *conn.Session, p string) (hostileLock, error) { return semaphoremutex.New(s, p) }
	// A semaphore with one lease: its holder keeps its internal lock node
	// as the lease, and the waiter queues behind that node.
	openSemaphore := func(s *conn.Session, p string) (hostileLock, error) {
		sem, err := semaphoremutex.NewSemaphore(s, p, 1)
		if err != nil {
			return nil, err
		}
		return &semaphoreLock{s: sem, path: p}, nil
	}
	return []ownRevokeRecipe{
		{name: "mutex", open: openMutex, waiter: openMutex},
		{name: "rwlock-write", open: openWrite, waiter: openWrite},
		{name: "rwlock-read", open: openRead, waiter: openWrite},
		{name: "semmutex", open: openSemMutex, waiter: openSemMutex},
		{name: "semaphore", open: openSemaphore, waiter: openSemaphore},
	}
}

// ownWrites are the two ways a holder's own session might write into its
// node: lock.Revoke, and a plain Session.Set. Each is refused with its error.
var ownWrites = []struct {
	name  string
	write func(ctx context.Context, s *conn.Session, node string) error
	want  error
}{
	{"revoke", func(ctx context.Context, s *conn.Session, node string) error { return lock.Revoke(ctx, s, node) }, lock.ErrNotRevocable},
	{"set", func(ctx context.Context, s *conn.Session, node string) error {
		_, err := s.Set(ctx, node, []byte("mine"), -1)
		return err
	}, conn.ErrInvalidArgument},
}

// TestWriteThroughOwnSession: lock.Revoke or Session.Set called through the
// holder's own session, once or again, on a sealed node (the default) is
// refused and writes nothing: the node keeps data version 0, so the waiter
// of another session behind it is not let in, the holder still holds, and
// the waiter is granted only once the holder releases. (A sealed node gives
// its own session every right: the refusal must come from us, not the
// server.)
func TestWriteThroughOwnSession(t *testing.T) {
	c := newZK(t)
	for _, rec := range ownRevokeRecipes() {
		for _, wr := range ownWrites {
			for _, times := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/%s/%d", rec.name, wr.name, times), func(t *testing.T) {
					ctx := locktest.Ctx(t, 60*time.Second)
					q := queueBehind(t, ctx, c, locktest.UniquePath(c, "ownwrite-"+rec.name), rec.open, rec.waiter)
					hs, ws, hl, w := q.hs, q.ws, q.hl, q.w

					for range times {
						assert.ErrorIs(t, wr.write(ctx, hs, hl.Path()), wr.want, "a sealed node refuses its own session's write")
					}
					data, st, err := ws.Get(ctx, hl.Path())
					require.NoError(t, err, "the holder's node exists")
					assert.Zero(t, st.Version, "nothing was written into the sealed node (data now %q)", data)

					_, err = hl.GuardedWrite(ctx)
					assert.NoError(t, err, "the holder still holds")
					assert.NoError(t, hl.Err())
					assert.False(t, w.granted(), "the waiter got in while the holder holds: %v", w.err)

					require.NoError(t, q.holder.Release(ctx))
					w.enters(t, ctx, "after the release")
				})
			}
		}
	}
}

// TestSetOwnWaitingNode: a waiter's Session.Set on its own waiting node is
// refused, so the waiter queued behind it is not let in while the holder
// holds.
func TestSetOwnWaitingNode(t *testing.T) {
	c := newZK(t)
	for _, rec := range ownRevokeRecipes() {
		if rec.name == "rwlock-read" {
			continue // its waiter is a writer: the same case as rwlock-write
		}
		t.Run(rec.name, func(t *testing.T) {
			ctx := locktest.Ctx(t, 60*time.Second)
			path := locktest.UniquePath(c, "ownwait-"+rec.name)
			q := queueBehind(t, ctx, c, path, rec.open, rec.waiter)
			w1s, w2s := q.ws, dial(t, c.Servers())
			second, err := rec.waiter(w2s, path)
			require.NoError(t, err)
			before := connlink.Of(w2s).Stats().WatchesSet
			w2 := acquireAsync(ctx, second)
			watching(t, w2s, before)

			own := ownNode(t, w1s, path)
			require.NotEmpty(t, own, "the first waiter's node")
			_, err = w1s.Set(ctx, own, []byte("mine"), -1)
			assert.ErrorIs(t, err, conn.ErrInvalidArgument)

			_, err = q.hl.GuardedWrite(ctx)
			assert.NoError(t, err, "the holder still holds")
			assert.False(t, w2.granted(), "the second waiter got in while the holder holds: %v", w2.err)
			require.NoError(t, q.holder.Release(ctx))
			q.w.enters(t, ctx, "after the release")
			w2.enters(t, ctx, "after the release")
		})
	}
}

// ownNode finds the node s owns under path or one level below it (a
// semaphore's nodes are under its locks and leases children).
func ownNode(t *testing.T, s *conn.Session, path string) string {
	t.Helper()
	ctx := locktest.Ctx(t, 20*time.Second)
	id := epochOf(t, s).SessionID()
	var walk func(p string, depth int) string
	walk = func(p string, depth int) string {
		names, _, err := s.Children(ctx, p)
		require.NoError(t, err)
		for _, n := range names {
			if _, st, err := s.Get(ctx, p+"/"+n); err == nil && st.EphemeralOwner == id {
				return p + "/" + n
			}
			if depth > 0 {
				if found := walk(p+"/"+n, depth-1); found != "" {
					return found
				}
			}
		}
		return ""
	}
	return walk(path, 1)
}
