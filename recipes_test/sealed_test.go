package recipes_test

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// exclusiveRecipe is one lock of the third-party write tests: a holder and
// a waiter queued right behind it.
type exclusiveRecipe struct {
	name string
	// open makes a handle; revocable asks for WithRevocable (only when
	// canRevoke).
	open func(s *conn.Session, path string, revocable bool) (hostileLock, error)
	// openWaiter makes the waiter's handle; nil: open.
	openWaiter func(s *conn.Session, path string, revocable bool) (hostileLock, error)
	canRevoke  bool // lock.Revoke reaches it
}

func exclusiveRecipes() []exclusiveRecipe {
	mutexOpts := func(rev bool) []lock.Option {
		if rev {
			return []lock.Option{lock.WithRevocable()}
		}
		return nil
	}
	rwOpts := func(rev bool) []lock.Option {
		if rev {
			return []lock.Option{lock.WithRevocable()}
		}
		return nil
	}
	semOpts := func(rev bool) []lock.Option {
		if rev {
			return []lock.Option{lock.WithRevocable()}
		}
		return nil
	}
	return []exclusiveRecipe{
		{
			name: "mutex",
			open: func(s *conn.Session, p string, rev bool) (hostileLock, error) {
				return nilLock(mutex.New(s, p, mutexOpts(rev)...))
			},
			canRevoke: true,
		},
		{
			name: "rwlock-write",
			open: func(s *conn.Session, p string, rev bool) (hostileLock, error) {
				rw, err := rwlock.New(s, p, rwOpts(rev)...)
				if err != nil {
					return nil, err
				}
				return rw.WriteLock(), nil
			},
			canRevoke: true,
		},
		{
			// A reader holds, a writer waits behind it.
			name: "rwlock-read",
			open: func(s *conn.Session, p string, rev bool) (hostileLock, error) {
				rw, err := rwlock.New(s, p, rwOpts(rev)...)
				if err != nil {
					return nil, err
				}
				return rw.ReadLock(), nil
			},
			openWaiter: func(s *conn.Session, p string, rev bool) (hostileLock, error) {
				rw, err := rwlock.New(s, p, rwOpts(rev)...)
				if err != nil {
					return nil, err
				}
				return rw.WriteLock(), nil
			},
			canRevoke: true,
		},
		{
			name: "semmutex",
			open: func(s *conn.Session, p string, rev bool) (hostileLock, error) {
				return nilLock(semaphoremutex.New(s, p, semOpts(rev)...))
			},
			canRevoke: true,
		},
		{
			name: "exclusive",
			open: func(s *conn.Session, p string, _ bool) (hostileLock, error) {
				return nilLock(exclusive.New(s, p))
			},
		},
	}
}

// rawClient is a plain go-zookeeper client with a session of its own: the
// third party.
func rawClient(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	zc, _, err := zk.Connect(servers, 6*time.Second, zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
	t.Cleanup(zc.Close)
	return zc
}

// pending is an Acquire running in the background, on a goroutine that
// also releases (the mutex is owned by its goroutine).
type pending struct {
	done    chan struct{} // closed when Acquire returned
	l       *conn.Lease
	err     error
	release chan context.Context
	relErr  chan error
}

func acquireAsync(ctx context.Context, lk hostileLock) *pending {
	p := &pending{done: make(chan struct{}), release: make(chan context.Context), relErr: make(chan error, 1)}
	go func() {
		p.l, p.err = lk.Acquire(ctx)
		close(p.done)
		if p.err != nil {
			return
		}
		p.relErr <- lk.Release(<-p.release)
	}()
	return p
}

// Release releases the lock on the goroutine that acquired it.
func (p *pending) Release(ctx context.Context) error {
	p.release <- ctx
	return <-p.relErr
}

func (p *pending) granted() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// enters waits for the waiter's grant (failing t, "the waiter was not
// granted" and after, if ctx ends first) and releases it.
func (p *pending) enters(t *testing.T, ctx context.Context, after string) {
	t.Helper()
	select {
	case <-p.done:
	case <-ctx.Done():
		t.Fatal("the waiter was not granted " + after)
	}
	require.NoError(t, p.err)
	require.NoError(t, p.Release(ctx))
}

// queue is a holder and, on another session, a waiter queued behind it.
type queue struct {
	hs, ws  *conn.Session
	holder  hostileLock
	hl      *conn.Lease
	w       *pending
	watches int64 // the waiter's session's confirmed watches once it watched
}

// queueBehind has a session of its own acquire the lock openHolder opens
// on path, then a waiter, of another session, queue behind it; it returns
// once the waiter watches.
func queueBehind(t *testing.T, ctx context.Context, c *zktest.Cluster, path string, openHolder, openWaiter func(*conn.Session, string) (hostileLock, error)) *queue {
	t.Helper()
	q := &queue{hs: dial(t, c.Servers()), ws: dial(t, c.Servers())}
	var err error
	q.holder, err = openHolder(q.hs, path)
	require.NoError(t, err)
	waiter, err := openWaiter(q.ws, path)
	require.NoError(t, err)
	q.hl, err = q.holder.Acquire(ctx)
	require.NoError(t, err)
	before := connlink.Of(q.ws).Stats().WatchesSet
	q.w = acquireAsync(ctx, waiter)
	q.watches = watching(t, q.ws, before)
	return q
}

// queueBehind is queueBehind with rec's handles, revocable or not.
func (rec exclusiveRecipe) queueBehind(t *testing.T, ctx context.Context, c *zktest.Cluster, path string, revocable bool) *queue {
	t.Helper()
	bind := func(o func(*conn.Session, string, bool) (hostileLock, error)) func(*conn.Session, string) (hostileLock, error) {
		return func(s *conn.Session, p string) (hostileLock, error) { return o(s, p, revocable) }
	}
	openWaiter := rec.open
	if rec.openWaiter != nil {
		openWaiter = rec.openWaiter
	}
	return queueBehind(t, ctx, c, path, bind(rec.open), bind(openWaiter))
}

// watching waits until the server has confirmed more watches to s than
// before.
func watching(t *testing.T, s *conn.Session, before int64) int64 {
	t.Helper()
	require.True(t, locktest.WaitFor(t, 10*time.Second, "a confirmed watch", func() bool {
		return connlink.Of(s).Stats().WatchesSet > before
	}))
	return connlink.Of(s).Stats().WatchesSet
}

// TestThirdPartyWrite: a third party (a raw go-zookeeper client with a
// session of its own) writes into the holder's node while a waiter is
// queued behind it and watching. The waiter must not be granted until the
// holder releases. With sealed nodes (the default) the write fails with
// zk.ErrNoAuth; with revocable nodes it succeeds, "__REVOKE__" closes the
// holder's Revoked, and the holder keeps the lock (Lost stays open).
// lock.Revoke is refused on a sealed node (lock.ErrNotRevocable) and
// reaches a revocable one.
func TestThirdPartyWrite(t *testing.T) {
	c := newZK(t)
	raw := rawClient(t, c.Servers())
	for _, rec := range exclusiveRecipes() {
		modes := []bool{false}
		if rec.canRevoke {
			modes = append(modes, true)
		}
		for _, revocable := range modes {
			name := rec.name + "/sealed"
			if revocable {
				name = rec.name + "/revocable"
			}
			t.Run(name, func(t *testing.T) {
				ctx := locktest.Ctx(t, 60*time.Second)
				q := rec.queueBehind(t, ctx, c, locktest.UniquePath(c, "thirdparty-"+rec.name), revocable)
				hl, ws, w, before := q.hl, q.ws, q.w, q.watches
				lost, revoked := hl.Lost(), hl.Revoked()

				for i, data := range []string{"mine now", "__REVOKE__"} {
					_, err := raw.Set(hl.Path(), []byte(data), -1)
					if !revocable {
						require.ErrorIs(t, err, zk.ErrNoAuth, "a foreign write into a sealed node")
						continue
					}
					require.NoError(t, err, "a foreign write into a revocable node")
					// The waiter reads the node again and watches it again.
					before = watching(t, ws, before)
					if i == 0 {
						assert.False(t, isClosed(revoked), "only __REVOKE__ is a revoke request")
					}
				}
				if rec.canRevoke {
					err := lock.Revoke(ctx, dial(t, c.Servers()), hl.Path())
					if revocable {
						require.NoError(t, err)
						watching(t, ws, before)
					} else {
						require.ErrorIs(t, err, lock.ErrNotRevocable)
					}
				}
				if revocable {
					select {
					case <-revoked:
					case <-time.After(10 * time.Second):
						t.Fatal("Revoked not closed after __REVOKE__")
					}
				} else {
					assert.False(t, isClosed(revoked), "a sealed node cannot be revoked")
				}
				assert.False(t, w.granted(), "the waiter got in while the holder holds: %v", w.err)
				assert.False(t, isClosed(lost), "the holder's lease is not lost: %v", hl.Err())
				_, err := hl.GuardedWrite(ctx)
				assert.NoError(t, err, "the holder still holds")

				require.NoError(t, q.holder.Release(ctx))
				w.enters(t, ctx, "after the release")
			})
		}
	}
}

// TestForeignPredecessorDataChange: our waiter queued behind foreign
// clients' nodes (Curator's and go-zookeeper's names, world-writable) is
// not granted when their data changes, even to our own handover mark, only
// once they are deleted.
func TestForeignPredecessorDataChange(t *testing.T) {
	c := newZK(t)
	raw := rawClient(t, c.Servers())
	ctx := locktest.Ctx(t, 60*time.Second)
	path := locktest.UniquePath(c, "foreign-data")
	s := dial(t, c.Servers())
	require.NoError(t, connlink.Of(epochOf(t, s)).CreateParents(ctx, path+"/x"))
	// go-zookeeper's name, then Curator's: our waiter watches the second.
	var foreign []string
	for _, name := range []string{"_c_" + hex32() + "-lock-", "_c_" + uuid.NewString() + "-lock-"} {
		f, err := raw.Create(path+"/"+name, []byte("10.0.0.1"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		foreign = append(foreign, f)
	}
	m, err := mutex.New(s, path)
	require.NoError(t, err)
	before := connlink.Of(s).Stats().WatchesSet
	w := acquireAsync(ctx, m)
	before = watching(t, s, before)
	for _, f := range foreign {
		for _, data := range []string{"__REVOKE__", "released"} {
			_, err = raw.Set(f, []byte(data), -1)
			require.NoError(t, err)
			if f == foreign[1] {
				before = watching(t, s, before) // it read the node again
			}
		}
	}
	// A delete of the first leaves the second: still not ours.
	require.NoError(t, raw.Delete(foreign[0], -1))
	for _, data := range []string{"__REVOKE__", "released"} {
		_, err = raw.Set(foreign[1], []byte(data), -1)
		require.NoError(t, err)
		before = watching(t, s, before)
		assert.False(t, w.granted(), "granted on a data change of a foreign node (%q): %v", data, w.err)
	}
	require.NoError(t, raw.Delete(foreign[1], -1))
	w.enters(t, ctx, "after the foreign node was deleted")
}

// leakRecipe is one lock of TestNoWatchLeft, with its lease (or leases).
type leakRecipe struct {
	name    string
	acquire func(ctx context.Context) ([]*conn.Lease, error)
	lost    func() <-chan struct{} // nil: the leases' own Lost
	release func(ctx context.Context) error
}

// TestNoWatchLeft: many acquire/release cycles on one open session, with
// Lost (or Revoked) called before Release in some cycles and after it in
// others, leave no watch of that session on the server (wchc), for every
// recipe.
func TestNoWatchLeft(t *testing.T) {
	c := newZK(t)
	const cycles = 12
	type opener func(s *conn.Session, path string) (leakRecipe, error)
	single := func(name string, lk hostileLock) leakRecipe {
		return leakRecipe{name: name,
			acquire: func(ctx context.Context) ([]*conn.Lease, error) {
				l, err := lk.Acquire(ctx)
				return []*conn.Lease{l}, err
			},
			release: lk.Release}
	}
	recipes := map[string]opener{
		"mutex": func(s *conn.Session, p string) (leakRecipe, error) {
			m, err := mutex.New(s, p)
			return single("mutex", m), err
		},
		"mutex-revocable": func(s *conn.Session, p string) (leakRecipe, error) {
			m, err := mutex.New(s, p, lock.WithRevocable())
			return single("mutex", m), err
		},
		"rwlock-read": func(s *conn.Session, p string) (leakRecipe, error) {
			rw, err := rwlock.New(s, p)
			if err != nil {
				return leakRecipe{}, err
			}
			return single("rwlock-read", rw.ReadLock()), nil
		},
		"rwlock-write": func(s *conn.Session, p string) (leakRecipe, error) {
			rw, err := rwlock.New(s, p)
			if err != nil {
				return leakRecipe{}, err
			}
			return single("rwlock-write", rw.WriteLock()), nil
		},
		"semmutex": func(s *conn.Session, p string) (leakRecipe, error) {
			m, err := semaphoremutex.New(s, p)
			return single("semmutex", m), err
		},
		"semaphore": func(s *conn.Session, p string) (leakRecipe, error) {
			sem, err := semaphoremutex.NewSemaphore(s, p, 2)
			return single("semaphore", &semaphoreLock{s: sem, path: p}), err
		},
		"exclusive": func(s *conn.Session, p string) (leakRecipe, error) {
			l, err := exclusive.New(s, p)
			return single("exclusive", l), err
		},
		"multilock": func(s *conn.Session, p string) (leakRecipe, error) {
			a, err := mutex.New(s, p+"/a")
			if err != nil {
				return leakRecipe{}, err
			}
			b, err := semaphoremutex.New(s, p+"/b")
			if err != nil {
				return leakRecipe{}, err
			}
			ml, err := multilock.New(a, b)
			if err != nil {
				return leakRecipe{}, err
			}
			return leakRecipe{name: "multilock", acquire: ml.Acquire, lost: ml.Lost, release: ml.Release}, nil
		},
	}
	for name, open := range recipes {
		t.Run(name, func(t *testing.T) {
			ctx := locktest.Ctx(t, 90*time.Second)
			s := dial(t, c.Servers())
			path := locktest.UniquePath(c, "watchleak-"+name)
			rec, err := open(s, path)
			require.NoError(t, err)
			for i := 0; i < cycles; i++ {
				leases, err := rec.acquire(ctx)
				require.NoError(t, err)
				watch := func() {
					if rec.lost != nil {
						rec.lost()
					}
					for _, l := range leases {
						if i%3 == 0 {
							l.Revoked()
						} else {
							l.Lost()
						}
					}
				}
				if i%2 == 0 {
					watch()
				}
				require.NoError(t, rec.release(ctx))
				if i%2 == 1 {
					watch()
				}
			}
			ep := epochOf(t, s)
			// Anything still in flight from the last cycle has been
			// answered once a request sent after it is.
			_, _, err = s.Exists(ctx, path)
			require.NoError(t, err)
			w := sessionWatches(t, c, ep.SessionID())
			assert.Empty(t, w, "watches of the open session after %d cycles", cycles)
		})
	}
}

// sessionWatches lists the paths the server holds a watch on for session
// id (four-letter command wchc).
func sessionWatches(t *testing.T, c *zktest.Cluster, id int64) []string {
	t.Helper()
	ctx := locktest.Ctx(t, 10*time.Second)
	out, err := c.FourLetter(ctx, 0, "wchc")
	require.NoError(t, err)
	var paths []string
	mine := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			f := strings.TrimSpace(line)
			v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
			mine = err == nil && int64(v) == id
			continue
		}
		if mine {
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	if len(paths) > 0 {
		t.Logf("wchc for 0x%x: %v", id, paths)
	}
	return paths
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
