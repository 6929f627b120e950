package recipes_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
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
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// invalidPaths are lock paths every constructor must refuse with an error
// matching conn.ErrInvalidArgument, with what its message must say.
var invalidPaths = []struct {
	path string
	says string
}{
	{"", "empty path"},
	{"rel", "is relative"},
	{"rel/a", "is relative"},
	{"/a/", "ends with /"},
	{"//", "ends with /"},
	{"/a//b", "empty segment"},
	{"/a/../b", `".." segment`},
	{"/a/./b", `"." segment`},
	{"/a\x00b", "NUL"},
	{"/a\x1fb", "U+001F"},
	{"/a\xffb", "U+FFFD"},
	{"/zookeeper", "path /zookeeper is reserved"},
	{"/zookeeper/x", "path /zookeeper/x is reserved"},
}

// hostileLock is the method set the hostile tests drive.
type hostileLock interface {
	Acquire(ctx context.Context) (*conn.Lease, error)
	TryAcquire(ctx context.Context) (*conn.Lease, bool, error)
	Release(ctx context.Context) error
	Path() string
}

// semaphoreLock drives a Semaphore as a hostileLock, holding one lease at a
// time.
type semaphoreLock struct {
	s    *semaphoremutex.Semaphore
	path string // the semaphore's
	mu   sync.Mutex
	l    *conn.Lease
}

func (s *semaphoreLock) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, err := s.s.Acquire(ctx)
	if err == nil {
		s.mu.Lock()
		s.l = l
		s.mu.Unlock()
	}
	return l, err
}

func (s *semaphoreLock) TryAcquire(ctx context.Context) (*conn.Lease, bool, error) {
	l, ok, err := s.s.TryAcquire(ctx)
	if ok {
		s.mu.Lock()
		s.l = l
		s.mu.Unlock()
	}
	return l, ok, err
}

func (s *semaphoreLock) Release(ctx context.Context) error {
	s.mu.Lock()
	l := s.l
	s.l = nil
	s.mu.Unlock()
	return s.s.ReturnLease(ctx, l)
}

func (s *semaphoreLock) Path() string { return s.path }

// hostileRecipe is one lock type of the hostile tests.
type hostileRecipe struct {
	name string
	open func(s *conn.Session, path string) (hostileLock, error)
	// dirs are the nodes under which the recipe creates its contenders.
	dirs func(path string) []string
	// blockers are names of foreign contenders, in dirs(path)[len-1],
	// that the recipe must count as holders (foreign clients' nodes:
	// Curator, kazoo, go-zookeeper, another host): enough of them to keep
	// it from being granted.
	blockers []string
	notHeld  error // the sentinel of Release without a hold
}

const semaphoreTestLeases = 2

func hex32() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func hostileRecipes() []hostileRecipe {
	here := func(p string) []string { return []string{p} }
	semDirs := func(p string) []string { return []string{p + "/locks", p + "/leases"} }
	return []hostileRecipe{
		{
			name: "mutex",
			open: func(s *conn.Session, p string) (hostileLock, error) { return nilLock(mutex.New(s, p)) },
			dirs: here,
			// kazoo's lock node: a contender by design (interop).
			blockers: []string{hex32() + "__lock__0000000000"},
			notHeld:  lock.ErrNotHeld,
		},
		{
			name: "rwlock-read",
			open: func(s *conn.Session, p string) (hostileLock, error) {
				rw, err := rwlock.New(s, p)
				if err != nil {
					return nil, err
				}
				return rw.ReadLock(), nil
			},
			dirs:     here,
			blockers: []string{"other-host-W-0000000000"},
			notHeld:  lock.ErrNotHeld,
		},
		{
			name: "rwlock-write",
			open: func(s *conn.Session, p string) (hostileLock, error) {
				rw, err := rwlock.New(s, p)
				if err != nil {
					return nil, err
				}
				return rw.WriteLock(), nil
			},
			dirs:     here,
			blockers: []string{"other-host-R-0000000000"},
			notHeld:  lock.ErrNotHeld,
		},
		{
			name: "semaphore",
			open: func(s *conn.Session, p string) (hostileLock, error) {
				sem, err := semaphoremutex.NewSemaphore(s, p, semaphoreTestLeases)
				if err != nil {
					return nil, err
				}
				return &semaphoreLock{s: sem, path: p}, nil
			},
			dirs: semDirs,
			// Curator's and go-zookeeper's lease names.
			blockers: []string{"_c_" + uuid.NewString() + "-lease-0000000000", "_c_" + hex32() + "-lease-0000000001"},
			notHeld:  lock.ErrNotHeld,
		},
		{
			name:     "semmutex",
			open:     func(s *conn.Session, p string) (hostileLock, error) { return nilLock(semaphoremutex.New(s, p)) },
			dirs:     semDirs,
			blockers: []string{"_c_" + uuid.NewString() + "-lease-0000000000"},
			notHeld:  lock.ErrNotHeld,
		},
		{
			name:     "exclusive",
			open:     func(s *conn.Session, p string) (hostileLock, error) { return nilLock(exclusive.New(s, p)) },
			dirs:     here,
			blockers: []string{"lock"},
			notHeld:  lock.ErrNotHeld,
		},
	}
}

// nilLock turns a constructor's (*T, error) into (hostileLock, error)
// without wrapping a nil *T in a non-nil interface.
func nilLock[T hostileLock](l T, err error) (hostileLock, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

// foreignNames are children no recipe may count as a contender: they must
// be ignored wherever they appear in a lock path.
func foreignNames() []string {
	u := uuid.NewString()
	return []string{
		"hello", "lock-", "_c_x-lock-abc", "x-R-", "x-W-abc", "R-0000000001", "-W-0000000001",
		"host-Q-0000000001", "_c_" + u + "-lock-9999999999", "_c_" + u + "-lock-00000000x1",
		"_c_" + u + "-unlock-0000000001", "_c_" + u + "-lease-", hex32() + "__rlock__0000000001",
		hex32() + "__lock__", "lease-0000000001", "schlüssel-0000000001",
	}
}

// garbage is data no recipe wrote: binary bytes, text, and a node's worth
// of filler.
var garbage = [][]byte{
	{0x00, 0xff, 0xfe, 0x7f, 0x80, 0x01},
	[]byte(`{"id": 42, "host": [1,2], "pid": "x"}`),
	[]byte("host=evil pid=1 id="),
	bytes.Repeat([]byte{0xa5}, 512<<10),
}

// hostileEnv is what the hostile tests share: one server, a foreign
// session that plays the other clients and the operator, and a root.
type hostileEnv struct {
	c       *zktest.Cluster
	foreign *conn.Session
	root    string
}

func newHostileEnv(t *testing.T) *hostileEnv {
	c := newZK(t)
	return &hostileEnv{c: c, foreign: dial(t, c.Servers()), root: c.Root() + "/hostile"}
}

// dial opens a session and closes it in t.Cleanup.
func dial(t *testing.T, servers []string, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := conn.Connect(ctx, servers, append([]conn.Option{conn.WithSessionTimeout(6 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func epochOf(t *testing.T, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	return ep
}

// mkdirs creates p and its missing parents as persistent nodes with data.
func mkdirs(t *testing.T, s *conn.Session, p string, data []byte) {
	t.Helper()
	ctx := locktest.Ctx(t, 20*time.Second)
	ep := epochOf(t, s)
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, p))
	_, err := s.Create(ctx, p, data, 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNodeExists) {
		require.NoError(t, err, "create %s", p)
	}
}

// noneOf asserts that session s owns no ephemeral node under path.
func noneOf(t *testing.T, observer, s *conn.Session, path string) {
	t.Helper()
	ep := epochOf(t, s)
	ok := locktest.WaitFor(t, 15*time.Second, "no node of ours left under "+path, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m, err := locktest.Ephemerals(ctx, observer, path)
		return err == nil && len(locktest.OwnedBy(m, ep.SessionID())) == 0
	})
	if !ok {
		m, _ := locktest.Ephemerals(context.Background(), observer, path)
		t.Errorf("left on the server: %v", locktest.OwnedBy(m, ep.SessionID()))
	}
}

// notCtxErr asserts that err is an error of its own, not the context's: a
// failure that came fast rather than a timeout.
func notCtxErr(t *testing.T, err error) {
	t.Helper()
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "failed fast, not by timing out")
	assert.NotErrorIs(t, err, context.Canceled)
}

// TestHostileInput feeds every constructor and method of the lock packages
// bad arguments, and every recipe lock paths full of nodes it did not make.
// Each must give a clear error (errors.Is against the packages' sentinels)
// or ignore what is not its own; nothing may panic, hang or be left on the
// server.
func TestHostileInput(t *testing.T) {
	env := newHostileEnv(t)
	ours := dial(t, env.c.Servers())
	t.Run("Constructors", func(t *testing.T) { testHostileConstructors(t, ours, env.root) })
	t.Run("MultilockConstructor", func(t *testing.T) { testHostileMultilockNew(t, ours, env.root) })
	for _, rec := range hostileRecipes() {
		t.Run(rec.name, func(t *testing.T) {
			t.Run("BadCalls", func(t *testing.T) { testHostileCalls(t, env, ours, rec) })
			t.Run("ForeignChildrenAndData", func(t *testing.T) { testHostileForeignChildren(t, env, ours, rec) })
			t.Run("ForeignContenders", func(t *testing.T) { testHostileBlockers(t, env, ours, rec) })
			t.Run("LostCreateBesideForeignNode", func(t *testing.T) { testHostileLostCreate(t, env, rec) })
			t.Run("EphemeralParent", func(t *testing.T) { testHostileEphemeralParent(t, env, ours, rec) })
		})
	}
	t.Run("OwnershipErrors", func(t *testing.T) { testHostileOwnership(t, env, ours) })
	t.Run("MultilockBadCalls", func(t *testing.T) { testHostileMultilockCalls(t, env, ours) })
	t.Run("MultilockRollbackOnEphemeralParent", func(t *testing.T) { testHostileMultilockRollback(t, env, ours) })
	t.Run("SemaphoreForeignLease", func(t *testing.T) { testHostileSemaphoreRelease(t, env, ours) })
}

// testHostileConstructors: nil session, invalid paths, nil and invalid
// options, invalid lease counts. On error no handle is returned.
func testHostileConstructors(t *testing.T, s *conn.Session, root string) {
	type ctor struct {
		name string
		make func(s *conn.Session, path string) (any, error)
	}
	ctors := []ctor{
		{"mutex.New", func(s *conn.Session, p string) (any, error) { return mutex.New(s, p) }},
		{"rwlock.New", func(s *conn.Session, p string) (any, error) { return rwlock.New(s, p) }},
		{"semaphoremutex.NewSemaphore", func(s *conn.Session, p string) (any, error) { return semaphoremutex.NewSemaphore(s, p, 3) }},
		{"semaphoremutex.New", func(s *conn.Session, p string) (any, error) { return semaphoremutex.New(s, p) }},
		{"exclusive.New", func(s *conn.Session, p string) (any, error) { return exclusive.New(s, p) }},
		{"leader.New", func(s *conn.Session, p string) (any, error) { return leader.New(s, p, "id") }},
	}
	// check: f fails with an error matching conn.ErrInvalidArgument that
	// says what was wrong, and returns no handle.
	check := func(t *testing.T, name string, f func() (any, error), says string) {
		t.Helper()
		var h any
		var err error
		require.NotPanics(t, func() { h, err = f() }, name)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, name)
		assert.ErrorContains(t, err, says, name)
		assert.True(t, isNilHandle(h), "%s returned a handle with its error", name)
	}
	for _, c := range ctors {
		t.Run(c.name, func(t *testing.T) {
			// One error value for a nil session, whichever recipe; the
			// message says which.
			check(t, "nil session", func() (any, error) { return c.make(nil, "/ok") }, "nil session")
			check(t, "nil session, bad path", func() (any, error) { return c.make(nil, "rel") }, "nil session")
			_, err := c.make(nil, "/ok")
			pkg, _, _ := strings.Cut(c.name, ".")
			assert.True(t, strings.HasPrefix(err.Error(), pkg+": "), "%q names its recipe", err)
			for _, p := range invalidPaths {
				check(t, fmt.Sprintf("path %q", p.path), func() (any, error) { return c.make(s, p.path) }, p.says)
			}
			h, err := c.make(s, "/hostile/ok")
			require.NoError(t, err)
			require.False(t, isNilHandle(h))
		})
	}
	check(t, "mutex nil option", func() (any, error) { return mutex.New(s, "/ok", nil) }, "nil option")
	check(t, "rwlock nil option", func() (any, error) { return rwlock.New(s, "/ok", nil) }, "nil option")
	check(t, "semaphore nil option", func() (any, error) { return semaphoremutex.NewSemaphore(s, "/ok", 1, nil) }, "nil option")
	check(t, "semaphore mutex nil option", func() (any, error) { return semaphoremutex.New(s, "/ok", nil) }, "nil option")
	check(t, "exclusive bad path", func() (any, error) { return exclusive.New(s, "/a/../b") }, `".." segment`)
	for _, n := range []int{0, -1, math.MinInt} {
		check(t, fmt.Sprintf("%d leases", n), func() (any, error) { return semaphoremutex.NewSemaphore(s, "/ok", n) }, fmt.Sprintf("%d leases, at least 1", n))
	}
	for _, host := range []string{"a/b", "a\x00b", "\x7f", "\ufffe"} {
		check(t, fmt.Sprintf("rwlock host %q", host), func() (any, error) { return rwlock.New(s, "/ok", rwlock.WithHost(host)) },
			fmt.Sprintf("rwlock: new /ok: host %q", host))
	}
	check(t, "rwlock empty host", func() (any, error) { return rwlock.New(s, "/ok", rwlock.WithHost("")) }, "rwlock: new /ok: empty host")
	// A host that makes names parse oddly is still a valid segment: the
	// names are parsed from the right.
	rw, err := rwlock.New(s, root+"/odd-host", rwlock.WithHost("h-W-0000000001-R"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	assert.Regexp(t, `^h-W-0000000001-R-W-\d{10}$`, zkpath.Base(l.Path()), "the host as given")
	require.NoError(t, rw.WriteLock().Release(ctx))
}

// isNilHandle reports whether h, a constructor's first result, is nil.
func isNilHandle(h any) bool {
	switch v := h.(type) {
	case nil:
		return true
	case *mutex.InterProcessMutex:
		return v == nil
	case *rwlock.RWLock:
		return v == nil
	case *semaphoremutex.Semaphore:
		return v == nil
	case *semaphoremutex.Mutex:
		return v == nil
	case *exclusive.Lock:
		return v == nil
	case *multilock.MultiLock:
		return v == nil
	case *leader.Election:
		return v == nil
	}
	return false
}

// testHostileMultilockNew: empty, nil and duplicate locks.
func testHostileMultilockNew(t *testing.T, s *conn.Session, root string) {
	m1, err := mutex.New(s, root+"/ml/a")
	require.NoError(t, err)
	m1again, err := mutex.New(s, root+"/ml/a")
	require.NoError(t, err)
	m2, err := mutex.New(s, root+"/ml/b")
	require.NoError(t, err)
	rw, err := rwlock.New(s, root+"/ml/rw")
	require.NoError(t, err)
	var typedNil *mutex.InterProcessMutex
	var nilSem *semaphoremutex.Mutex
	for _, tc := range []struct {
		name  string
		locks []lock.Locker
		says  string
	}{
		{"none", nil, "no locks given"},
		{"empty", []lock.Locker{}, "no locks given"},
		{"nil", []lock.Locker{nil}, "lock 1 of 1 is nil"},
		{"nil among good", []lock.Locker{m1, nil, m2}, "lock 2 of 3 is nil"},
		{"typed nil", []lock.Locker{m1, typedNil}, "lock 2 of 2 is nil"},
		{"typed nil semaphore mutex", []lock.Locker{nilSem}, "lock 1 of 1 is nil"},
		{"same handle twice", []lock.Locker{m1, m2, m1}, "two locks on the same path"},
		{"two handles on one path", []lock.Locker{m1, m1again}, "two locks on the same path"},
		{"both sides of one rwlock", []lock.Locker{rw.ReadLock(), rw.WriteLock()}, "two locks on the same path"},
	} {
		var ml *multilock.MultiLock
		var err error
		require.NotPanics(t, func() { ml, err = multilock.New(tc.locks...) }, tc.name)
		assert.ErrorIs(t, err, conn.ErrInvalidArgument, tc.name)
		assert.ErrorContains(t, err, "multilock: new: "+tc.says, tc.name)
		assert.Nil(t, ml, tc.name)
	}
}

// testHostileCalls: calls in the wrong state or with dead contexts.
func testHostileCalls(t *testing.T, env *hostileEnv, s *conn.Session, rec hostileRecipe) {
	path := locktest.UniquePath(env.c, "hostile/calls-"+rec.name)
	lk, err := rec.open(s, path)
	require.NoError(t, err)
	assert.Equal(t, path, lk.Path())

	ctx := locktest.Ctx(t, 30*time.Second)
	assert.ErrorIs(t, lk.Release(ctx), rec.notHeld, "release before any acquire")

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"cancelled", cancelled, context.Canceled}, {"expired", expired, context.DeadlineExceeded}} {
		begin := time.Now()
		l, err := lk.Acquire(c.ctx)
		assert.ErrorIs(t, err, c.want, "acquire with a %s context", c.name)
		assert.Nil(t, l)
		l, ok, err := lk.TryAcquire(c.ctx)
		assert.ErrorIs(t, err, c.want, "try acquire with a %s context", c.name)
		assert.False(t, ok)
		assert.Nil(t, l)
		assert.Less(t, time.Since(begin), 5*time.Second, "a dead context returns at once")
	}
	assert.ErrorIs(t, lk.Release(ctx), rec.notHeld, "release after failed acquires")

	l, err := lk.Acquire(ctx)
	require.NoError(t, err)
	require.NotNil(t, l)
	require.NoError(t, lk.Release(ctx))
	assert.ErrorIs(t, lk.Release(ctx), rec.notHeld, "second release")
	select {
	case <-l.Lost():
	default:
		t.Error("a released lease is not Lost")
	}
	_, err = l.GuardedWrite(ctx, &zk.CheckVersionRequest{Path: path, Version: -1})
	assert.ErrorIs(t, err, conn.ErrLeaseLost, "guarded write through a released lease")
	noneOf(t, env.foreign, s, path)
}

// testHostileForeignChildren: the lock path exists already, with data of
// its own (binary, huge) and children no recipe made, some with huge or
// binary data. The recipe ignores them, leaves them as they are, and works.
func testHostileForeignChildren(t *testing.T, env *hostileEnv, s *conn.Session, rec hostileRecipe) {
	path := locktest.UniquePath(env.c, "hostile/children-"+rec.name)
	mkdirs(t, env.foreign, path, garbage[len(garbage)-1])
	ctx := locktest.Ctx(t, 60*time.Second)
	var made []string
	for _, dir := range rec.dirs(path) {
		mkdirs(t, env.foreign, dir, garbage[0])
		for i, name := range foreignNames() {
			p := zkpath.Join(dir, name)
			_, err := env.foreign.Create(ctx, p, garbage[i%len(garbage)], 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err, "create %s", p)
			made = append(made, p)
		}
	}
	lk, err := rec.open(s, path)
	require.NoError(t, err)

	var l *conn.Lease
	var ok bool
	require.NotPanics(t, func() { l, ok, err = lk.TryAcquire(ctx) })
	require.NoError(t, err)
	require.True(t, ok, "foreign children are not contenders")
	_, err = l.GuardedWrite(ctx, &zk.CheckVersionRequest{Path: path, Version: 0})
	assert.NoError(t, err, "a guarded write through the grant")
	switch m := lk.(type) {
	case *mutex.InterProcessMutex:
		ps, err := m.Participants(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1, "only our node is a participant")
		assert.Equal(t, l.Path(), ps[0].Node)
	case *semaphoremutex.Mutex:
		ps, err := m.Participants(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1, "only our lease is a participant")
		assert.Equal(t, l.Path(), ps[0].Node)
	case *semaphoreLock:
		ps, err := m.s.Participants(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1, "only our lease is listed")
		assert.Equal(t, l.Path(), ps[0].Node)
		assert.True(t, ps[0].Holding)
	}
	require.NoError(t, lk.Release(ctx))

	l, err = lk.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lk.Release(ctx))
	_ = l
	for _, p := range made {
		ok, _, err := env.foreign.Exists(ctx, p)
		require.NoError(t, err)
		assert.True(t, ok, "%s, not ours, was left alone", p)
	}
	noneOf(t, env.foreign, s, path)
}

// testHostileBlockers: persistent nodes that the recipe recognises as
// other clients' contenders (kazoo, Curator, go-zookeeper names; another
// host's rwlock nodes) hold the lock: TryAcquire says no, Acquire ends with
// ctx, and nothing of ours is left. Once they are gone, the lock is ours.
func testHostileBlockers(t *testing.T, env *hostileEnv, s *conn.Session, rec hostileRecipe) {
	path := locktest.UniquePath(env.c, "hostile/blockers-"+rec.name)
	ctx := locktest.Ctx(t, 60*time.Second)
	dirs := rec.dirs(path)
	dir := dirs[len(dirs)-1]
	mkdirs(t, env.foreign, dir, nil)
	var blockers []string
	for i, name := range rec.blockers {
		p := zkpath.Join(dir, name)
		_, err := env.foreign.Create(ctx, p, garbage[i%2], 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		blockers = append(blockers, p)
	}
	lk, err := rec.open(s, path)
	require.NoError(t, err)

	l, ok, err := lk.TryAcquire(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "foreign contenders hold the lock")
	assert.Nil(t, l)
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	l, err = lk.Acquire(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, l)
	noneOf(t, env.foreign, s, path)

	for _, p := range blockers {
		require.NoError(t, env.foreign.Delete(ctx, p, -1))
	}
	l, err = lk.Acquire(ctx)
	require.NoError(t, err)
	require.NotNil(t, l)
	require.NoError(t, lk.Release(ctx))
	noneOf(t, env.foreign, s, path)
}

// testHostileLostCreate: another client holds the lock with a node that
// looks like one of ours (a well-formed but unrelated uuid; for the
// read/write lock, the same host and so the same name prefix, with a
// reader of that host queued too), and the answer to our create is lost.
// Looking for our node by its acquire id must find ours, never adopt
// theirs: we wait for their release, get the lock with our own node, and
// leave no duplicate behind.
func testHostileLostCreate(t *testing.T, env *hostileEnv, rec hostileRecipe) {
	path := locktest.UniquePath(env.c, "hostile/lostcreate-"+rec.name)
	ctx := locktest.Ctx(t, 90*time.Second)
	proxy := zktest.NewProxy(t, env.c.Servers())
	ours := dial(t, proxy.Addrs())
	theirs := dial(t, env.c.Servers())
	open := func(s *conn.Session, write bool) hostileLock {
		if strings.HasPrefix(rec.name, "rwlock") {
			rw, err := rwlock.New(s, path, rwlock.WithHost("same-host"))
			require.NoError(t, err)
			if write {
				return rw.WriteLock()
			}
			return rw.ReadLock()
		}
		lk, err := rec.open(s, path)
		require.NoError(t, err)
		return lk
	}
	holder := open(theirs, true)
	mine := open(ours, rec.name != "rwlock-read")
	if rec.name == "semaphore" { // take every lease
		other := open(theirs, true)
		_, err := other.Acquire(ctx)
		require.NoError(t, err)
		defer func() { assert.NoError(t, other.Release(ctx)) }()
	}
	hl, err := holder.Acquire(ctx)
	require.NoError(t, err)
	var queued chan error // a reader of the same host, queued before ours
	if rec.name == "rwlock-read" {
		qs := dial(t, env.c.Servers())
		reader := open(qs, false)
		queued = make(chan error, 1)
		go func() {
			_, err := reader.Acquire(ctx)
			if err == nil {
				err = reader.Release(ctx)
			}
			queued <- err
		}()
		locktest.WaitFor(t, 10*time.Second, "the other reader to queue", func() bool {
			kids, _, err := env.foreign.Children(ctx, path)
			return err == nil && len(kids) == 2
		})
	}

	sub := ours.Subscribe(ctx)
	proxy.CutAfterNextWrite() // our first request is the create
	// One goroutine acquires and releases: the mutex and the read/write
	// lock are owned per goroutine.
	got, release, released := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	var ml *conn.Lease
	go func() {
		var err error
		ml, err = mine.Acquire(ctx)
		got <- err
		if err != nil {
			return
		}
		<-release
		released <- mine.Release(ctx)
	}()
	_, cut := locktest.WaitState(t, sub, 20*time.Second, conn.Suspended)
	assert.True(t, cut, "the connection was cut after our create")
	select {
	case err := <-got:
		t.Fatalf("acquired (err %v) while another client holds the lock: a foreign node was taken for ours", err)
	case <-time.After(2 * time.Second):
	}
	require.NoError(t, holder.Release(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("not granted after the other client released")
	}
	m, err := locktest.Ephemerals(ctx, env.foreign, path)
	require.NoError(t, err)
	assert.Equal(t, []string{ml.Path()}, locktest.OwnedBy(m, ml.Epoch().SessionID()),
		"exactly one node of ours: no ghost of the lost create")
	if rec.name != "exclusive" { // whose node is always <path>/lock
		assert.NotEqual(t, hl.Path(), ml.Path())
	}
	if queued != nil {
		assert.NoError(t, <-queued, "the other reader of the same host")
	}
	close(release)
	require.NoError(t, <-released)
	noneOf(t, env.foreign, ours, path)
}

// testHostileEphemeralParent: the lock path is an ephemeral node, or lies
// under one; ZooKeeper refuses children there. Acquire and TryAcquire fail
// fast with zk.ErrNoChildrenForEphemerals, and leave nothing.
func testHostileEphemeralParent(t *testing.T, env *hostileEnv, s *conn.Session, rec hostileRecipe) {
	ctx := locktest.Ctx(t, 60*time.Second)
	fep := epochOf(t, env.foreign)
	eph := locktest.UniquePath(env.c, "hostile/eph-"+rec.name)
	require.NoError(t, connlink.Of(fep).CreateParents(ctx, eph))
	_, err := env.foreign.Create(ctx, eph, []byte("ephemeral"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for _, path := range []string{eph, eph + "/lock", eph + "/a/b"} {
		lk, err := rec.open(s, path)
		require.NoError(t, err)
		bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
		begin := time.Now()
		l, err := lk.Acquire(bounded)
		assert.ErrorIs(t, err, zk.ErrNoChildrenForEphemerals, "acquire at %s", path)
		notCtxErr(t, err)
		assert.Nil(t, l)
		l, ok, err := lk.TryAcquire(bounded)
		assert.ErrorIs(t, err, zk.ErrNoChildrenForEphemerals, "try acquire at %s", path)
		assert.False(t, ok)
		assert.Nil(t, l)
		cancel()
		assert.Less(t, time.Since(begin), 10*time.Second, "fails fast")
		assert.ErrorIs(t, lk.Release(ctx), rec.notHeld)
	}
	noneOf(t, env.foreign, s, eph)
}

// testHostileOwnership: the per-goroutine locks refuse a release from a
// goroutine that does not hold them (ErrNotOwner) and an upgrade from read
// to write (ErrUpgrade), at once and without changing anything; the
// handle-owned locks may be released from any goroutine.
func testHostileOwnership(t *testing.T, env *hostileEnv, s *conn.Session) {
	ctx := locktest.Ctx(t, 60*time.Second)
	path := locktest.UniquePath(env.c, "hostile/owner")
	m, err := mutex.New(s, path+"/mutex")
	require.NoError(t, err)
	rw, err := rwlock.New(s, path+"/rw")
	require.NoError(t, err)

	// inOther runs f on a goroutine of its own and waits for it.
	inOther := func(f func()) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f()
		}()
		<-done
	}
	for _, lk := range []struct {
		name     string
		lock     hostileLock
		notOwner error
	}{{"mutex", m, lock.ErrNotOwner}, {"write lock", rw.WriteLock(), lock.ErrNotOwner}, {"read lock", rw.ReadLock(), lock.ErrNotOwner}} {
		l, err := lk.lock.Acquire(ctx)
		require.NoError(t, err, lk.name)
		var otherErr error
		inOther(func() { otherErr = lk.lock.Release(ctx) })
		assert.ErrorIs(t, otherErr, lk.notOwner, "%s released by another goroutine", lk.name)
		select {
		case <-l.Lost():
			t.Errorf("%s: a refused release lost the lease", lk.name)
		default:
		}
		require.NoError(t, lk.lock.Release(ctx), "%s released by its holder", lk.name)
	}

	_, err = rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	begin := time.Now()
	l, err := rw.WriteLock().Acquire(ctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.Nil(t, l)
	_, ok, err := rw.WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.False(t, ok)
	assert.Less(t, time.Since(begin), 5*time.Second, "refused at once")
	require.NoError(t, rw.ReadLock().Release(ctx))

	// Handle-owned: any goroutine releases.
	sm, err := semaphoremutex.New(s, path+"/semmutex")
	require.NoError(t, err)
	ex, err := exclusive.New(s, path+"/excl")
	require.NoError(t, err)
	for _, lk := range []hostileLock{sm, ex} {
		_, err := lk.Acquire(ctx)
		require.NoError(t, err)
		var otherErr error
		inOther(func() { otherErr = lk.Release(ctx) })
		assert.NoError(t, otherErr, "%T released by another goroutine", lk)
	}
	noneOf(t, env.foreign, s, path)
}

// testHostileMultilockCalls: calls in the wrong state.
func testHostileMultilockCalls(t *testing.T, env *hostileEnv, s *conn.Session) {
	path := locktest.UniquePath(env.c, "hostile/mlcalls")
	a, err := mutex.New(s, path+"/a")
	require.NoError(t, err)
	b, err := semaphoremutex.New(s, path+"/b")
	require.NoError(t, err)
	ml, err := multilock.New(b, a)
	require.NoError(t, err)
	ctx := locktest.Ctx(t, 30*time.Second)
	assert.ErrorIs(t, ml.Release(ctx), lock.ErrNotHeld)
	select {
	case <-ml.Lost():
	default:
		t.Error("Lost of a MultiLock that is not held is not closed")
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ml.Acquire(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
	ls, err := ml.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	assert.True(t, strings.HasPrefix(ls[0].Path(), path+"/a/"), "the leases in path order: %s first", ls[0].Path())
	assert.True(t, strings.HasPrefix(ls[1].Path(), path+"/b/"), "then %s", ls[1].Path())
	_, err = ml.Acquire(ctx)
	assert.ErrorIs(t, err, multilock.ErrBusy, "not reentrant")
	require.NoError(t, ml.Release(ctx))
	assert.ErrorIs(t, ml.Release(ctx), lock.ErrNotHeld)
	noneOf(t, env.foreign, s, path)
}

// testHostileMultilockRollback: the second lock's path lies under an
// ephemeral node. Acquire fails fast with that lock's error, and the first
// lock is rolled back: nothing of ours is left.
func testHostileMultilockRollback(t *testing.T, env *hostileEnv, s *conn.Session) {
	ctx := locktest.Ctx(t, 60*time.Second)
	path := locktest.UniquePath(env.c, "hostile/mlrollback")
	fep := epochOf(t, env.foreign)
	require.NoError(t, connlink.Of(fep).CreateParents(ctx, path+"/b"))
	_, err := env.foreign.Create(ctx, path+"/b", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	good, err := mutex.New(s, path+"/a")
	require.NoError(t, err)
	bad, err := rwlock.New(s, path+"/b/lock")
	require.NoError(t, err)
	ml, err := multilock.New(bad.WriteLock(), good)
	require.NoError(t, err)
	begin := time.Now()
	ls, err := ml.Acquire(ctx)
	assert.ErrorIs(t, err, zk.ErrNoChildrenForEphemerals)
	notCtxErr(t, err)
	assert.Nil(t, ls)
	assert.Less(t, time.Since(begin), 10*time.Second)
	assert.False(t, good.IsOwnedByCurrentGoroutine(), "the first lock was rolled back")
	noneOf(t, env.foreign, s, path)
}

// testHostileSemaphoreRelease: leases that are not the handle's.
func testHostileSemaphoreRelease(t *testing.T, env *hostileEnv, s *conn.Session) {
	ctx := locktest.Ctx(t, 30*time.Second)
	path := locktest.UniquePath(env.c, "hostile/semrelease")
	s1, err := semaphoremutex.NewSemaphore(s, path, 2)
	require.NoError(t, err)
	s2, err := semaphoremutex.NewSemaphore(s, path, 2)
	require.NoError(t, err)
	assert.ErrorIs(t, s1.ReturnLease(ctx, nil), lock.ErrNotHeld)
	l2, err := s2.Acquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, s1.ReturnLease(ctx, l2), lock.ErrNotHeld, "a lease of another handle")
	select {
	case <-l2.Lost():
		t.Error("releasing through the wrong handle disturbed the lease")
	default:
	}
	ok, _, err := s.Exists(ctx, l2.Path())
	require.NoError(t, err)
	assert.True(t, ok, "the other handle's lease node is still there")
	require.NoError(t, s2.ReturnLease(ctx, l2))
	assert.ErrorIs(t, s2.ReturnLease(ctx, l2), lock.ErrNotHeld, "twice")
	noneOf(t, env.foreign, s, path)
}
