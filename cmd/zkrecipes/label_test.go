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
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestLocksLabel: the label an acquire carries (lock.WithLabel) is what
// Participants says and what `zkrecipes locks` prints as the owner's, for
// a mutex, a read/write lock and a semaphore; a waiter's too.
func TestLocksLabel(t *testing.T) {
	c := testzk.Shared(t)
	root := testzk.Path(t, c, "labels")
	ss := testzk.ConnectN(t, c.Servers(), 2)
	ctx := testzk.Ctx(t, time.Minute)
	labelled := func(l lock.Locker, label string) *contender {
		return contendWith(t, func(ctx context.Context) (*conn.Lease, error) { return l.Acquire(lock.WithLabel(ctx, label)) },
			func(ctx context.Context, _ *conn.Lease) error { return l.Release(ctx) })
	}

	m0, err := mutex.New(ss[0], root+"/orders")
	require.NoError(t, err)
	m1, err := mutex.New(ss[1], root+"/orders")
	require.NoError(t, err)
	labelled(m0, "req-42").waitHeld(t)
	labelled(m1, "job nightly-export") // waits
	waitNodes(t, ss[0], root+"/orders", 2)

	rw, err := rwlock.New(ss[0], root+"/catalog")
	require.NoError(t, err)
	labelled(rw.ReadLock(), "reader-1").waitHeld(t)

	sem, err := semaphoremutex.NewSemaphore(ss[1], root+"/pool", 2)
	require.NoError(t, err)
	_, err = sem.Acquire(lock.WithLabel(ctx, "lease-a"))
	require.NoError(t, err)

	want := map[string]string{} // node path -> label, from Participants
	for _, list := range []func(context.Context) ([]lock.Participant, error){m0.Participants, rw.Participants, sem.Participants} {
		ps, err := list(ctx)
		require.NoError(t, err)
		for _, p := range ps {
			want[p.Node] = p.Label
		}
	}
	assert.Len(t, want, 4)
	assert.ElementsMatch(t, []string{"req-42", "job nightly-export", "reader-1", "lease-a"},
		func() (ls []string) {
			for _, l := range want {
				ls = append(ls, l)
			}
			return
		}(), "Participants' labels")

	srv := "-servers=" + servers(c.Servers())
	stdout, stderr, code := command(t, srv, "-json", "locks", root)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var v LocksView
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	got := map[string]string{}
	for _, q := range v.Queues {
		for _, n := range q.Nodes {
			got[n.Path] = n.Owner.Label
		}
	}
	assert.Equal(t, want, got, "the command's labels, by node")

	stdout, _, code = command(t, srv, "locks", root+"/orders")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, `label="req-42"`)
	assert.Contains(t, stdout, `label="job nightly-export"`)
	t.Logf("as printed:\n%s", stdout)
}
