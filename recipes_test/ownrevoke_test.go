package recipes_test

import (
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

// ownRevokeRecipe is one lock of TestRevokeThroughOwnSession: open makes a
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

// TestRevokeThroughOwnSession: lock.Revoke called through the holder's own
// session, once or again, on a sealed node (the default) is refused with
// lock.ErrNotRevocable and writes nothing: the node keeps data version 0,
// so the waiter of another session behind it is not let in, the holder
// still holds, and the waiter is granted only once the holder releases. (A
// sealed node gives its own session every right: the refusal must come
// from us, not the server.)
func TestRevokeThroughOwnSession(t *testing.T) {
	c := newZK(t)
	for _, rec := range ownRevokeRecipes() {
		for _, times := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d", rec.name, times), func(t *testing.T) {
				ctx := locktest.Ctx(t, 60*time.Second)
				path := locktest.UniquePath(c, "ownrevoke-"+rec.name)
				hs, ws := dial(t, c.Servers()), dial(t, c.Servers())
				holder, err := rec.open(hs, path)
				require.NoError(t, err)
				waiter, err := rec.waiter(ws, path)
				require.NoError(t, err)

				hl, err := holder.Acquire(ctx)
				require.NoError(t, err)
				before := connlink.Of(ws).Stats().WatchesSet
				w := acquireAsync(ctx, waiter)
				watching(t, ws, before)

				for range times {
					err = lock.Revoke(ctx, hs, hl.Path())
					assert.ErrorIs(t, err, lock.ErrNotRevocable, "a sealed node refuses a revoke, from its own session too")
				}
				data, st, err := ws.Get(ctx, hl.Path())
				require.NoError(t, err, "the holder's node exists")
				assert.Zero(t, st.Version, "nothing was written into the sealed node (data now %q)", data)

				_, err = hl.GuardedWrite(ctx)
				assert.NoError(t, err, "the holder still holds")
				assert.NoError(t, hl.Err())
				assert.False(t, w.granted(), "the waiter got in while the holder holds: %v", w.err)

				require.NoError(t, holder.Release(ctx))
				select {
				case <-w.done:
				case <-ctx.Done():
					t.Fatal("the waiter was not granted after the release")
				}
				require.NoError(t, w.err)
				require.NoError(t, w.Release(ctx))
			})
		}
	}
}
