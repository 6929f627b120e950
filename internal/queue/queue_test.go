package queue

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/metrics"
)

func TestAcquireReleaseUncontended(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	path := lockPath(t, c)
	q := mutexQueue(t, s, path)
	ctx := ctxTimeout(t, 30*time.Second)

	before := requests(s)
	l, err := q.Acquire(ctx) // the path does not exist yet: create fails, parents, create
	require.NoError(t, err)
	first := requests(s) - before
	names := children(t, s, path)
	require.Len(t, names, 1)
	assert.Equal(t, path+"/"+names[0], l.Path())
	assert.NoError(t, l.Err())
	require.NoError(t, q.Release(ctx, l))
	assert.Empty(t, children(t, s, path))
	assert.ErrorIs(t, l.Err(), conn.ErrLeaseLost, "a released lease is no longer held")

	before = requests(s)
	l, err = q.Acquire(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, requests(s)-before, "create + getChildren")
	before = requests(s)
	require.NoError(t, q.Release(ctx, l))
	assert.EqualValues(t, 1, requests(s)-before, "delete")
	t.Logf("first acquire on a missing path: %d requests", first)
}

// TestHandoffCostsNoRelist: a waiter lists the children once and reads
// its predecessor's ACL with its data; the handoff is the holder's delete,
// one notification and, the delete being a plain one, one read of the
// waiter's own node (confirm).
func TestHandoffCostsNoRelist(t *testing.T) {
	for _, relist := range []bool{false, true} {
		t.Run(map[bool]string{false: "cache", true: "relist"}[relist], func(t *testing.T) {
			c := cluster(t)
			path := lockPath(t, c)
			holder := mutexQueue(t, connect(t, c.Servers()), path)
			ws := connect(t, c.Servers())
			waiter, err := New(ws, path, Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}, Options{Relist: relist})
			require.NoError(t, err)
			ctx := ctxTimeout(t, 30*time.Second)

			hl, err := holder.Acquire(ctx)
			require.NoError(t, err)
			before := connlink.Of(ws).Stats()
			got := make(chan error, 1)
			var wl *conn.Lease
			go func() {
				var err error
				wl, err = waiter.Acquire(ctx)
				got <- err
			}()
			eventually(t, 10*time.Second, func() bool { return connlink.Of(ws).Stats().WatchesSet > before.WatchesSet }, "waiter watching")
			require.NoError(t, holder.Withdraw(ctx, hl)) // a plain delete
			require.NoError(t, <-got)
			after := connlink.Of(ws).Stats()
			// One notification, or none if the release overtook the getW.
			// The holder is another session's: its deletion needs no read
			// of our node (confirm).
			events := after.WatchEvents - before.WatchEvents
			assert.LessOrEqual(t, events, int64(1))
			want := int64(4) // create, getChildren, getW, getACL
			if relist {
				want = 5 // getChildren again, which shows our node
			}
			assert.Equal(t, want, after.TotalRequests()-before.TotalRequests(), "requests %v", after.Requests)
			require.NoError(t, waiter.Release(ctx, wl))
		})
	}
}

// Acquire ids as Curator (a UUID) and go-zookeeper or kazoo (32 hex digits)
// put them in names.
const (
	uuid1 = "3f2a6c1e-9b7d-4e21-8c3a-0d5f7b9e1a24"
	hex1  = "9f86d081884c7d659a2feaa0c55ad015"
)

func TestFIFOAndForeignChildren(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	path := lockPath(t, c)
	q := mutexQueue(t, s, path)
	ctx := ctxTimeout(t, 30*time.Second)
	ep := epoch(t, s)
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, path+"/x"))
	acl := connlink.Of(s).ACL()

	// Foreign nodes: not a contender, kazoo's and go-zookeeper's lock nodes
	// (contenders, queued before us), a Curator node of another recipe.
	_, err := s.Create(ctx, path+"/hello", []byte("hi"), 0, acl)
	require.NoError(t, err)
	kazoo, err := s.Create(ctx, path+"/"+hex1+"__lock__", nil, zk.FlagSequence, acl)
	require.NoError(t, err)
	gozk, err := s.Create(ctx, path+"/_c_"+hex1+"-lock-", []byte("10.1.2.3"), zk.FlagSequence, acl)
	require.NoError(t, err)
	_, err = s.Create(ctx, path+"/_c_"+uuid1+"-lease-", nil, zk.FlagSequence, acl)
	require.NoError(t, err)

	l, ok, err := q.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "two foreign contenders are queued before us")
	assert.Nil(t, l)
	assert.Len(t, children(t, s, path), 4, "TryAcquire left no node")

	got := make(chan *conn.Lease, 1)
	go func() {
		l, err := q.Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	eventually(t, 10*time.Second, func() bool { return len(children(t, s, path)) == 5 }, "our node queued")
	ps, err := q.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 3)
	assert.Equal(t, hex1, ps[0].ID)
	assert.False(t, ps[0].Known, "kazoo's node has no data we can read")
	assert.Equal(t, "10.1.2.3", ps[1].Host)
	assert.True(t, ps[2].Known)
	assert.Equal(t, locknode.Hostname(), ps[2].Host)

	require.NoError(t, s.Delete(ctx, gozk, -1)) // not the one we watch: no grant
	select {
	case <-got:
		t.Fatal("acquired while kazoo's node is queued before us")
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, s.Delete(ctx, kazoo, -1))
	select {
	case l = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("not acquired after the contenders before us left")
	}
	require.NoError(t, q.Release(ctx, l))
	assert.ElementsMatch(t, []string{"hello", children(t, s, path)[1]}, children(t, s, path))
}

func TestParentReaped(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	path := lockPath(t, c)
	q := mutexQueue(t, s, path)
	ctx := ctxTimeout(t, 30*time.Second)
	for i := 0; i < 2; i++ {
		l, err := q.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, q.Release(ctx, l))
		// What the container reaper does to an empty lock path.
		require.NoError(t, s.Delete(ctx, path, -1))
	}
}

// TestReadWriteQueue shows a second recipe on the engine: readers share,
// a writer waits for the readers before it, a reader after the writer waits.
func TestReadWriteQueue(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	path := lockPath(t, c)
	ctx := ctxTimeout(t, 30*time.Second)
	newQ := func(kind string, p Predicate) *Queue {
		q, err := New(s, path, Config{Schema: locknode.HostKindSchema{Host: "host-a", Kind: kind}, Predicate: p}, Options{})
		require.NoError(t, err)
		return q
	}
	reader, writer := newQ("R", NoneBefore("W")), newQ("W", First)

	r1, err := reader.Acquire(ctx)
	require.NoError(t, err)
	r2, err := reader.Acquire(ctx)
	require.NoError(t, err, "readers share")
	_, ok, err := writer.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok)

	wgot := make(chan *conn.Lease, 1)
	go func() {
		l, err := writer.Acquire(ctx)
		assert.NoError(t, err)
		wgot <- l
	}()
	eventually(t, 10*time.Second, func() bool { return len(children(t, s, path)) == 3 }, "writer queued")
	_, ok, err = reader.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a reader queues behind a writer")

	require.NoError(t, reader.Release(ctx, r2))
	require.NoError(t, reader.Release(ctx, r1))
	var w *conn.Lease
	select {
	case w = <-wgot:
	case <-time.After(10 * time.Second):
		t.Fatal("writer not granted")
	}
	require.NoError(t, writer.Release(ctx, w))
	assert.Empty(t, children(t, s, path))
}

// TestCancelWhileQueued: the waiter's node is deleted before Acquire
// returns, with the context's error.
func TestCancelWhileQueued(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	path := lockPath(t, c)
	q := mutexQueue(t, s, path)
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := q.Acquire(ctx)
	require.NoError(t, err)

	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = q.Acquire(tctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, children(t, s, path), 1, "only the holder's node")

	cctx, cancel := context.WithCancel(ctx)
	gets := watchesSet(s)
	done := make(chan error, 1)
	go func() {
		_, err := q.Acquire(cctx)
		done <- err
	}()
	watching(t, s, gets)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Len(t, children(t, s, path), 1, "only the holder's node")
	require.NoError(t, q.Release(ctx, l))
}

func TestNewValidates(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	cfg := Config{Schema: locknode.ProtectedSchema{Name: "lock"}, Predicate: First}
	_, err := New(nil, "/a", cfg, Options{})
	assert.Error(t, err)
	_, err = New(s, "a/b", cfg, Options{})
	assert.ErrorIs(t, err, conn.ErrInvalidArgument)
	_, err = New(s, "/a", Config{Predicate: First}, Options{})
	assert.ErrorIs(t, err, ErrBadRecipe)
}

// TestStaleCacheAfterAbandon: waiters ahead of us give up while the holder
// still holds. Our cache says they are gone and others may be; we must keep
// waiting for the holder, paying at most one request per wake-up before
// the next watch.
func TestStaleCacheAfterAbandon(t *testing.T) {
	c := cluster(t)
	path := lockPath(t, c)
	hs, ws, ms := connect(t, c.Servers()), connect(t, c.Servers()), connect(t, c.Servers())
	holder, others, me := mutexQueue(t, hs, path), mutexQueue(t, ws, path), mutexQueue(t, ms, path)
	ctx := ctxTimeout(t, time.Minute)
	hl, err := holder.Acquire(ctx)
	require.NoError(t, err)

	// Two waiters ahead of us, each cancellable.
	var cancels []context.CancelFunc
	done := make(chan error, 2)
	for i := 0; i < 2; i++ {
		wctx, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		gets := watchesSet(ws)
		go func() {
			_, err := others.Acquire(wctx)
			done <- err
		}()
		watching(t, ws, gets)
	}
	got := make(chan *conn.Lease, 1)
	go func() {
		l, err := me.Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	watching(t, ms, 0)
	require.Len(t, children(t, hs, path), 4)

	// Our predecessor leaves: two entries before us are left in the cache
	// (holder, first waiter): one listing, then a watch on the first waiter
	// (getW, and getACL beside it).
	before := requests(ms)
	cancels[1]()
	require.ErrorIs(t, <-done, context.Canceled)
	eventually(t, 5*time.Second, func() bool { return requests(ms)-before >= 3 }, "relist + getW + getACL")
	watching(t, ms, 0)
	assert.EqualValues(t, 3, requests(ms)-before, "relist + getW + getACL")
	assert.EqualValues(t, 2, connlink.Of(ms).Stats().Requests[metrics.OpChildren], "the first listing and one re-list")

	// The first waiter leaves: the holder is the one entry left: one getW
	// (and its getACL). No read of our own node: the holder is another
	// session's (confirm).
	before = requests(ms)
	gets := watchesSet(ms)
	cancels[0]()
	require.ErrorIs(t, <-done, context.Canceled)
	watching(t, ms, gets)
	select {
	case <-got:
		t.Fatal("acquired while the holder holds")
	case <-time.After(100 * time.Millisecond):
	}
	assert.EqualValues(t, 2, requests(ms)-before, "one getW and one getACL on the holder")

	// The holder releases with a plain delete: granted with no request (its
	// node was another session's).
	before = requests(ms)
	require.NoError(t, holder.Withdraw(ctx, hl))
	var l *conn.Lease
	select {
	case l = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("not granted")
	}
	assert.EqualValues(t, 0, requests(ms)-before)
	assert.EqualValues(t, 0, connlink.Of(ms).Stats().Requests[metrics.OpExists])
	require.NoError(t, me.Release(ctx, l))
	for _, cancel := range cancels {
		cancel()
	}
}

// Config.Data replaces the engine's node data; it needs a schema that
// names nodes by their acquire id.
func TestConfigData(t *testing.T) {
	c := cluster(t)
	s := connect(t, c.Servers())
	path := lockPath(t, c)
	_, err := New(s, path, Config{Schema: locknode.HostKindSchema{Host: "h", Kind: "W"}, Predicate: First, Data: []byte("x")}, Options{})
	assert.ErrorIs(t, err, ErrBadRecipe)

	q, err := New(s, path, Config{Schema: locknode.ProtectedSchema{Name: "latch"}, Predicate: First, Data: []byte("participant-1")}, Options{})
	require.NoError(t, err)
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := q.Acquire(ctx)
	require.NoError(t, err)
	b, _, err := s.Get(ctx, l.Path())
	require.NoError(t, err)
	assert.Equal(t, "participant-1", string(b))
	require.NoError(t, q.Release(ctx, l))
}
