package recipes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Credentials of the ACL tests. The password is distinctive so that a log
// line carrying it cannot go unnoticed.
const (
	aclUser     = "alice"
	aclPassword = "pw-7f3c1e-never-log-me"
)

func aliceOnly() []zk.ACL { return zk.DigestACL(zk.PermAll, aclUser, aclPassword) }

// aliceAndWorldRead: alice may do anything, everyone else only read.
func aliceAndWorldRead() []zk.ACL {
	return append(aliceOnly(), zk.WorldACL(zk.PermRead)...)
}

// quietLogger keeps go-zookeeper's own client quiet.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// rawACL reads a node's ACL with a plain go-zookeeper client authenticated
// as alice (conn has no GetACL: recipes never need one).
func rawACL(t *testing.T, servers []string, path string) []zk.ACL {
	t.Helper()
	zc, _, err := zk.Connect(servers, 5*time.Second, zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
	defer zc.Close()
	require.NoError(t, zc.AddAuth("digest", []byte(aclUser+":"+aclPassword)))
	acl, _, err := zc.GetACL(path)
	require.NoError(t, err, "getACL %s", path)
	return acl
}

// TestACL: lock nodes carry the session's ACL (WithACL; world:anyone ALL by
// default), a client without the credentials can neither delete nor take
// over another's lock and gets zk.ErrNoAuth, a lock under a parent it may
// not write fails fast with zk.ErrNoAuth, and no log line carries the
// password.
func TestACL(t *testing.T) {
	c := newZK(t)
	base := c.Root() + "/acl"
	// The observer: alice's credentials let it see her nodes too.
	admin := dial(t, c.Servers(), conn.WithDigestAuth(aclUser, aclPassword))
	mkdirs(t, admin, base, nil) // world:anyone ALL, so that no test's ACL lands on the shared root

	t.Run("DefaultIsWorldAll", func(t *testing.T) { testACLDefault(t, c, admin, base) })
	for _, rec := range hostileRecipes() {
		t.Run(rec.name, func(t *testing.T) {
			t.Run("NoTakeover", func(t *testing.T) { testACLNoTakeover(t, c, admin, base, rec) })
			t.Run("ReadOnlyParentFailsFast", func(t *testing.T) { testACLReadOnlyParent(t, c, admin, base, rec) })
			t.Run("WritablePathUnderReadOnlyAncestor", func(t *testing.T) { testACLWritableUnderReadOnly(t, c, admin, base, rec) })
		})
	}
	t.Run("CredentialsNeverLogged", func(t *testing.T) { testACLNotLogged(t, c, base) })
}

// testACLDefault: without WithACL, the lock path is world:anyone ALL, as
// conn.WithACL documents, and lock nodes are sealed: world:anyone without
// WRITE and ADMIN, plus the session's own digest identity with ALL.
func testACLDefault(t *testing.T, c *zktest.Cluster, admin *conn.Session, base string) {
	s := dial(t, c.Servers())
	path := locktest.UniquePath(c, "acl/default")
	lk, err := hostileRecipes()[0].open(s, path)
	require.NoError(t, err)
	ctx := locktest.Ctx(t, 30*time.Second)
	l, err := lk.Acquire(ctx)
	require.NoError(t, err)
	assertSealed(t, zk.WorldACL(zk.PermAll), rawACL(t, c.Servers(), l.Path()))
	assert.Equal(t, zk.WorldACL(zk.PermAll), rawACL(t, c.Servers(), path))
	assert.Equal(t, zk.WorldACL(zk.PermAll), connlink.Of(s).ACL())
	require.NoError(t, lk.Release(ctx))
}

// assertSealed asserts that got is base sealed: every entry without WRITE
// and ADMIN, plus one digest identity of the session's own with ALL.
func assertSealed(t *testing.T, base, got []zk.ACL) {
	t.Helper()
	var want []zk.ACL
	for _, a := range base {
		a.Perms &^= zk.PermWrite | zk.PermAdmin
		want = append(want, a)
	}
	require.Len(t, got, len(want)+1, "%v", got)
	own := got[len(got)-1]
	assert.Equal(t, "digest", own.Scheme)
	assert.True(t, strings.HasPrefix(own.ID, "zkrecipes-"), "the session's own identity: %v", own)
	assert.Equal(t, int32(zk.PermAll), own.Perms)
	// Without ADMIN on the node, the server hides digest hashes from
	// getACL ("user:x"): compare digest identities by user.
	user := func(acl []zk.ACL) []zk.ACL {
		out := make([]zk.ACL, len(acl))
		for i, a := range acl {
			if a.Scheme == "digest" {
				a.ID, _, _ = strings.Cut(a.ID, ":")
			}
			out[i] = a
		}
		return out
	}
	assert.ElementsMatch(t, user(want), user(got[:len(got)-1]))
}

// testACLNoTakeover: alice holds a lock whose nodes carry her digest ACL.
// A client without credentials, and one with wrong ones, cannot delete or
// overwrite her lock node, cannot queue for the lock (the lock path is
// hers too) — each gets zk.ErrNoAuth, at once — and her lease is intact.
func testACLNoTakeover(t *testing.T, c *zktest.Cluster, admin *conn.Session, base string, rec hostileRecipe) {
	ctx := locktest.Ctx(t, 60*time.Second)
	alice := dial(t, c.Servers(), conn.WithDigestAuth(aclUser, aclPassword), conn.WithACL(aliceOnly()))
	path := locktest.UniquePath(c, "acl/takeover-"+rec.name)
	lk, err := rec.open(alice, path)
	require.NoError(t, err)
	l, err := lk.Acquire(ctx)
	require.NoError(t, err)
	assertSealed(t, aliceOnly(), rawACL(t, c.Servers(), l.Path())) // the lock node carries the ACL, sealed
	assert.ElementsMatch(t, aliceOnly(), rawACL(t, c.Servers(), path), "so does the lock path")
	lost := l.Lost()

	for _, intruder := range []struct {
		name string
		opts []conn.Option
	}{
		{"anonymous", nil},
		{"wrong password", []conn.Option{conn.WithDigestAuth(aclUser, "guess")}},
		{"other user", []conn.Option{conn.WithDigestAuth("mallory", aclPassword)}},
	} {
		s := dial(t, c.Servers(), intruder.opts...)
		err := s.Delete(ctx, l.Path(), -1)
		assert.ErrorIs(t, err, zk.ErrNoAuth, "%s deletes the lock node", intruder.name)
		_, err = connlink.Of(epochOf(t, s)).Set(ctx, l.Path(), []byte("mine now"), -1) // past Session.Set's refusal, to the server
		assert.ErrorIs(t, err, zk.ErrNoAuth, "%s overwrites the lock node", intruder.name)
		_, _, err = s.Get(ctx, l.Path())
		assert.ErrorIs(t, err, zk.ErrNoAuth, "%s reads the lock node", intruder.name)

		theirs, err := rec.open(s, path)
		require.NoError(t, err)
		bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
		begin := time.Now()
		tl, err := theirs.Acquire(bounded)
		assert.ErrorIs(t, err, zk.ErrNoAuth, "%s acquires", intruder.name)
		notCtxErr(t, err)
		assert.Nil(t, tl)
		_, ok, err := theirs.TryAcquire(bounded)
		assert.ErrorIs(t, err, zk.ErrNoAuth, "%s tries to acquire", intruder.name)
		assert.False(t, ok)
		cancel()
		assert.Less(t, time.Since(begin), 10*time.Second, "%s: refused fast", intruder.name)
		noneOf(t, admin, s, path)
	}

	select {
	case <-lost:
		t.Fatalf("alice's lease was lost: %v", l.Err())
	default:
	}
	_, err = l.GuardedWrite(ctx, &zk.CheckVersionRequest{Path: l.Path(), Version: 0})
	assert.NoError(t, err, "alice still holds her lock")
	require.NoError(t, lk.Release(ctx))
	noneOf(t, admin, alice, path)
}

// testACLReadOnlyParent: alice made a parent that everyone else may only
// read. Another client's lock there (at the parent itself, or below it)
// fails fast with zk.ErrNoAuth instead of retrying or hanging, and leaves
// nothing.
func testACLReadOnlyParent(t *testing.T, c *zktest.Cluster, admin *conn.Session, base string, rec hostileRecipe) {
	ctx := locktest.Ctx(t, 90*time.Second)
	alice := dial(t, c.Servers(), conn.WithDigestAuth(aclUser, aclPassword))
	parent := locktest.UniquePath(c, "acl/readonly-"+rec.name)
	_, err := alice.Create(ctx, parent, []byte("alice's"), 0, aliceAndWorldRead())
	require.NoError(t, err)

	bob := dial(t, c.Servers())
	for _, path := range []string{parent, parent + "/lock", parent + "/a/b"} {
		lk, err := rec.open(bob, path)
		require.NoError(t, err)
		bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
		begin := time.Now()
		l, err := lk.Acquire(bounded)
		assert.ErrorIs(t, err, zk.ErrNoAuth, "acquire at %s", path)
		notCtxErr(t, err)
		assert.Nil(t, l)
		l, ok, err := lk.TryAcquire(bounded)
		assert.ErrorIs(t, err, zk.ErrNoAuth, "try acquire at %s", path)
		assert.False(t, ok)
		assert.Nil(t, l)
		cancel()
		assert.Less(t, time.Since(begin), 10*time.Second, "refused fast at %s", path)
		assert.ErrorIs(t, lk.Release(ctx), rec.notHeld)
	}
	noneOf(t, admin, bob, parent)
	kids, _, err := bob.Children(ctx, parent)
	require.NoError(t, err, "the parent is world-readable")
	assert.Empty(t, kids, "nothing was created under alice's parent")
}

// testACLWritableUnderReadOnly: alice's parent is read-only to others, but
// she made a directory in it that everyone may write. Another client's lock
// below that directory works, also when the lock path does not exist yet
// (first use, or its container was reaped): making the lock path's
// parents must not trip over alice's read-only parent, where the server
// answers NoAuth rather than NodeExists for a node that exists.
func testACLWritableUnderReadOnly(t *testing.T, c *zktest.Cluster, admin *conn.Session, base string, rec hostileRecipe) {
	ctx := locktest.Ctx(t, 60*time.Second)
	alice := dial(t, c.Servers(), conn.WithDigestAuth(aclUser, aclPassword))
	parent := locktest.UniquePath(c, "acl/shared-"+rec.name)
	_, err := alice.Create(ctx, parent, nil, 0, aliceAndWorldRead())
	require.NoError(t, err)
	shared := parent + "/locks"
	_, err = alice.Create(ctx, shared, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	bob := dial(t, c.Servers())
	for _, path := range []string{shared + "/mine", shared + "/deeper/mine"} {
		lk, err := rec.open(bob, path)
		require.NoError(t, err)
		bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
		l, err := lk.Acquire(bounded)
		cancel()
		require.NoError(t, err, "a lock at %s, writable by all under a read-only parent", path)
		require.NoError(t, lk.Release(ctx))
		_ = l
	}
	noneOf(t, admin, bob, parent)
}

// testACLNotLogged: connect with digest credentials, acquire and release
// every recipe, lose the connection (go-zookeeper sends the credentials
// again) and acquire again, with a Debug-level observer as the logger: no
// entry's message or fields carry the password.
func testACLNotLogged(t *testing.T, c *zktest.Cluster, base string) {
	core, logs := observer.New(zap.DebugLevel)
	logger := zap.New(core)
	proxy := zktest.NewProxy(t, c.Servers())
	s := dial(t, proxy.Addrs(), conn.WithLogger(logger), conn.WithDigestAuth(aclUser, aclPassword), conn.WithACL(aliceOnly()))
	ctx := locktest.Ctx(t, 90*time.Second)
	run := func(round string) {
		for _, rec := range hostileRecipes() {
			lk, err := rec.open(s, locktest.UniquePath(c, "acl/log-"+rec.name))
			require.NoError(t, err)
			_, err = lk.Acquire(ctx)
			require.NoError(t, err, "%s: %s", round, rec.name)
			require.NoError(t, lk.Release(ctx))
		}
	}
	run("first session")

	sub := s.Subscribe(ctx)
	proxy.Cut()
	_, ok := locktest.WaitState(t, sub, 30*time.Second, conn.Reconnected, conn.Connected)
	require.True(t, ok)
	run("after a reconnect")
	ep := epochOf(t, s)
	require.NoError(t, zktest.ExpireEpoch(ctx, c.Servers()[0], ep))
	_, ok = locktest.WaitState(t, sub, 30*time.Second, conn.Connected)
	require.True(t, ok)
	run("in a new session")

	entries := logs.All()
	require.NotEmpty(t, entries, "the observer saw the Debug lines")
	for _, e := range entries {
		line := e.Message + " " + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, aclPassword) {
			t.Errorf("a log entry carries the password: %s %q", e.Level, line)
		}
	}
	t.Logf("%d log entries, none with the password", len(entries))
}
