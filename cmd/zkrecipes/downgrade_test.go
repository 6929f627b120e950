package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// actor runs calls on one goroutine of its own: the read/write lock is
// owned per goroutine, and a downgrade is the write holder taking the read
// lock.
type actor struct{ calls chan func() }

func newActor(t *testing.T) *actor {
	a := &actor{calls: make(chan func())}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range a.calls {
			f()
		}
	}()
	t.Cleanup(func() { close(a.calls); <-done })
	return a
}

// do runs f on the actor's goroutine and waits for it.
func (a *actor) do(f func()) {
	done := make(chan struct{})
	a.calls <- func() { defer close(done); f() }
	<-done
}

// TestLocksDowngrade compares what `zkrecipes locks` says of a read/write
// lock after a downgrade with what the library granted and with
// RWLock.Participants: the downgrade's read node holds, and a write node
// kept for it after the write lock's release (a writer queued between our
// two nodes) holds nothing ("kept"), the writer between waits.
func TestLocksDowngrade(t *testing.T) {
	c := testzk.Shared(t)
	ss := testzk.ConnectN(t, c.Servers(), 2)
	ctx := testzk.Ctx(t, time.Minute)
	srv := "-servers=" + servers(c.Servers())

	// statuses returns the command's status of each node, by name, and
	// the kind.
	statuses := func(path string) map[string]string {
		t.Helper()
		stdout, stderr, code := command(t, srv, "-json", "locks", path)
		require.Equal(t, 0, code, "stderr: %s", stderr)
		var v LocksView
		require.NoError(t, json.Unmarshal([]byte(stdout), &v))
		out := map[string]string{}
		for _, q := range v.Queues {
			for _, n := range q.Nodes {
				out[n.Name] = n.Status + " " + n.Kind
			}
		}
		return out
	}
	// check compares the command's view with want (by node) and with
	// Participants' Holding.
	check := func(rw *rwlock.RWLock, want map[string]string) {
		t.Helper()
		path := rw.WriteLock().Path()
		got := statuses(path)
		assert.Equal(t, want, got, "zkrecipes locks %s", path)
		ps, err := rw.Participants(ctx)
		require.NoError(t, err)
		holding := map[string]bool{}
		for _, p := range ps {
			holding[zkpath.Base(p.Node)] = p.Holding
		}
		require.Len(t, holding, len(got), "Participants: %+v", ps)
		for name, st := range got {
			assert.Equal(t, holding[name], st == "holds read" || st == "holds write",
				"%s: the command says %q, Participants says Holding=%v", name, st, holding[name])
		}
	}
	var wl, rl *conn.Lease

	t.Run("alone", func(t *testing.T) {
		rw, err := rwlock.New(ss[0], testzk.Path(t, c, "catalog"))
		require.NoError(t, err)
		g := newActor(t)
		g.do(func() {
			wl, err = rw.WriteLock().Acquire(ctx)
			require.NoError(t, err)
			rl, err = rw.ReadLock().Acquire(ctx) // downgrade: granted at once
			require.NoError(t, err)
		})
		w, r := zkpath.Base(wl.Path()), zkpath.Base(rl.Path())
		check(rw, map[string]string{w: "holds write", r: "holds read"})

		g.do(func() { require.NoError(t, rw.WriteLock().Release(ctx)) })
		require.NoError(t, rl.Err(), "the read lock is still held")
		check(rw, map[string]string{r: "holds read"})
		g.do(func() { require.NoError(t, rw.ReadLock().Release(ctx)) })
	})

	t.Run("writer between", func(t *testing.T) {
		path := testzk.Path(t, c, "catalog")
		rw, err := rwlock.New(ss[0], path)
		require.NoError(t, err)
		other, err := rwlock.New(ss[1], path)
		require.NoError(t, err)
		g := newActor(t)
		g.do(func() {
			wl, err = rw.WriteLock().Acquire(ctx)
			require.NoError(t, err)
		})
		x := contend(t, other.WriteLock()) // queues between our two nodes
		waitNodes(t, ss[0], path, 2)
		g.do(func() {
			rl, err = rw.ReadLock().Acquire(ctx)
			require.NoError(t, err)
		})
		names := testzk.Children(t, ss[0], path)
		require.Len(t, names, 3)
		w, r := zkpath.Base(wl.Path()), zkpath.Base(rl.Path())
		var between string
		for _, n := range names {
			if n != w && n != r {
				between = n
			}
		}
		check(rw, map[string]string{w: "holds write", between: "waits write", r: "holds read"})

		// The write lock's release keeps our write node (the writer
		// between would get in), but the write lease is released.
		g.do(func() { require.NoError(t, rw.WriteLock().Release(ctx)) })
		select {
		case <-wl.Lost():
		default:
			t.Fatal("the write lease is not released")
		}
		require.NoError(t, rl.Err(), "the read lock is still held")
		require.Len(t, testzk.Children(t, ss[0], path), 3, "the write node is kept")
		check(rw, map[string]string{w: "kept write", between: "waits write", r: "holds read"})

		g.do(func() { require.NoError(t, rw.ReadLock().Release(ctx)) })
		x.waitHeld(t)
		check(rw, map[string]string{between: "holds write"})
		x.Release(t)
	})
	_ = context.Background
}
