package attack_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestNamespacePathsAreOneCoordinateSystem checks, under
// conn.WithNamespace ("a chroot that callers never see"), that the paths the
// public API hands out (Lease.Path, Participant.Node) are the ones it takes
// back (Session.Exists, Revoke), for mutex, rwlock, semaphore mutex and
// leader; that a lock taken through a namespace excludes one taken through
// the full path without it (one lock, multilock/doc.go's "One lock is one
// lock"); that GuardedWrite's ops are namespaced; and that multilock.New
// refuses the same full path reached through two namespaces
// (conn.ErrInvalidArgument).
func TestNamespacePathsAreOneCoordinateSystem(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 25*time.Second)
	ns := f.Path("ns")
	sn := f.Session(conn.WithNamespace(ns))
	sp := f.Session() // plain, sees the full paths
	zc := f.Raw()
	// foundBySession: the lease's path is the one its session takes back.
	foundBySession := func(t *testing.T, l *conn.Lease) {
		t.Helper()
		if ok, _, err := sn.Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its session: %v %v", l.Path(), ok, err)
		}
	}
	// keptOut: the same lock through its full path, without a namespace,
	// is taken.
	keptOut := func(t *testing.T, what string, other tryAcquirer, release func(context.Context) error) {
		t.Helper()
		if _, ok, err := other.TryAcquire(ctx); ok || err != nil {
			t.Errorf("%s through the full path: ok=%v err=%v, want (false, nil)", what, ok, err)
			if ok {
				_ = release(ctx)
			}
		}
	}
	// revokedBy: Revoke of the node Participants lists reaches the lease.
	revokedBy := func(t *testing.T, l *conn.Lease, node string) {
		t.Helper()
		rev := l.Revoked()
		if err := lock.Revoke(ctx, sn, node); err != nil {
			t.Errorf("Revoke(Participant.Node %q) under a namespace: %v", node, err)
		}
		if _, ok := within(rev, 5*time.Second); !ok {
			t.Errorf("Revoked not closed after Revoke(Participant.Node %q), lease %q", node, l.Path())
		}
	}

	t.Run("mutex", func(t *testing.T) {
		m, _ := mutex.New(sn, "/m", lock.WithRevocable())
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		foundBySession(t, l)
		ps, err := m.Participants(ctx)
		if err != nil || len(ps) != 1 || ps[0].Node != l.Path() {
			t.Errorf("Participants %+v (%v), want one with Node %q", ps, err, l.Path())
		}
		other, _ := mutex.New(sp, connlink.Of(sn).FullPath("/m"))
		keptOut(t, "TryAcquire of the same lock", other, other.Release)
		// GuardedWrite is namespaced.
		_, err = l.GuardedWrite(ctx, &zk.CreateRequest{Path: "/m-res", Data: []byte("x"), Acl: zkWorld})
		require.NoError(t, err)
		if !exists(zc, ns+"/m-res") {
			t.Errorf("GuardedWrite's create did not land at %s", ns+"/m-res")
		}
		revokedBy(t, l, ps[0].Node)
		require.NoError(t, m.Release(ctx))
	})
	t.Run("rwlock", func(t *testing.T) {
		rw, _ := rwlock.New(sn, "/rw")
		l, err := rw.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		foundBySession(t, l)
		other, _ := rwlock.New(sp, connlink.Of(sn).FullPath("/rw"))
		keptOut(t, "read TryAcquire while written", other.ReadLock(), other.ReadLock().Release)
		require.NoError(t, rw.WriteLock().Release(ctx))
	})
	t.Run("semaphoremutex", func(t *testing.T) {
		m, _ := semaphoremutex.New(sn, "/s", lock.WithRevocable())
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		foundBySession(t, l)
		ps, err := m.Participants(ctx)
		if err != nil || len(ps) != 1 {
			t.Fatalf("Participants %+v (%v)", ps, err)
		}
		revokedBy(t, l, ps[0].Node)
		other, _ := semaphoremutex.New(sp, connlink.Of(sn).FullPath("/s"))
		keptOut(t, "TryAcquire", other, other.Release)
		require.NoError(t, m.Release(ctx))
	})
	t.Run("leader", func(t *testing.T) {
		e, _ := leader.New(sn, "/l", "n")
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		p, err := e.Leader(ctx)
		if err != nil || p.Node != l.Path() || p.ID != "n" {
			t.Errorf("Leader %+v (%v), want Node %q", p, err, l.Path())
		}
		o, _ := leader.New(sp, connlink.Of(sn).FullPath("/l"), "p")
		if p2, err := o.Leader(ctx); err != nil || p2.ID != "n" {
			t.Errorf("Leader through the full path: %+v %v", p2, err)
		}
		require.NoError(t, e.Resign(ctx))
	})
	t.Run("multilock", func(t *testing.T) {
		f := f.In(t)
		a, _ := mutex.New(sn, "/x/y")
		sn2 := f.Session(conn.WithNamespace(ns + "/x"))
		b, _ := mutex.New(sn2, "/y")
		if _, err := multilock.New(a, b); !errors.Is(err, conn.ErrInvalidArgument) || !strings.Contains(err.Error(), "two locks on the same path") {
			t.Errorf("multilock.New over %s reached through two namespaces: %v, want ErrInvalidArgument (two locks on the same path)", connlink.Of(sn).FullPath("/x/y"), err)
		}
	})
}

// TestNamespaceDigestUnderCutAndExpiry: sessions with
// conn.WithNamespace, conn.WithDigestAuth and a digest-only ACL
// (conn.WithACL), A through a proxy, queue on one mutex: A holds, B waits.
//   - the zkrecipes command with -namespace and -auth (docs/operations.md: "the
//     chroot your services use with conn.WithNamespace, so that PATH is the
//     path they use"; "-auth user:password ... when the lock tree is not
//     world-readable") shows A holding and B waiting, as Participants does;
//     without -auth it exits 5 ("authentication refused: ZooKeeper answered
//     NOAUTH");
//   - A's connection is cut while it holds (the same session comes back):
//     WithDigestAuth's credentials are "sent to the server at the start of
//     every session", and a connection that comes back must still be allowed
//     to delete under the digest-only parent: A's Release must be nil and B
//     granted;
//   - then B's session is expired by the server while C waits: C is granted,
//     and the command shows C holding under its session.
func TestNamespaceDigestUnderCutAndExpiry(t *testing.T) {
	bin := zkrecipesBin(t)
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	ns := f.Path("r4-ns")
	acl := zk.DigestACL(zk.PermAll, "svc", "secret")
	opts := []conn.Option{conn.WithNamespace(ns), conn.WithDigestAuth("svc", "secret"), conn.WithACL(acl)}
	px, sa := f.ProxiedSession(opts...)
	sb := f.Session(opts...)
	// the namespace root, readable by the service only
	zc := f.Raw()
	require.NoError(t, zc.AddAuth("digest", []byte("svc:secret")))
	ensure(t, zc, zkWorld, f.Root())
	ensure(t, zc, acl, ns)
	queue := ns + "/locks/x"
	ma, _ := mutex.New(sa, "/locks/x")
	mb, _ := mutex.New(sb, "/locks/x")
	mc, _ := mutex.New(f.Session(opts...), "/locks/x")
	ha := hold(ctx, ma)
	la := ha.wait(t, 60*time.Second, "ha")
	hb := hold(ctx, mb)
	waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(zc, queue)) == 2 })

	run := func(args ...string) (locksQueue, int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-servers", strings.Join(f.Servers(), ","), "-timeout", "5s"}, args...)...)
		cmd.Env = append(os.Environ(), "ZK_AUTH=", "ZK_NAMESPACE=", "ZK_SERVERS=")
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return locksQueue{}, ee.ExitCode(), string(out)
		}
		require.NoError(t, err)
		var doc locksDoc
		require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
		require.Len(t, doc.Queues, 1, "queues: %s", out)
		return doc.Queues[0], 0, string(out)
	}
	q, code, out := run("-namespace", ns, "-auth", "svc:secret", "-json", "locks", "/locks")
	if code != 0 || len(q.Nodes) != 2 || q.Nodes[0].Status != "holds" || q.Nodes[1].Status != "waits" || !strings.HasSuffix(la.Path(), q.Nodes[0].Name) {
		t.Fatalf("command: code %d, %s (A holds %s)", code, out, la.Path())
	}
	if q.Path != "/locks/x" {
		t.Errorf("queue path %q, want the path the services use, /locks/x", q.Path)
	}
	ps, err := mc.Participants(ctx)
	if err != nil || len(ps) != 2 || !ps[0].Holding || ps[0].Node != la.Path() {
		t.Fatalf("Participants: %v %+v", err, ps)
	}
	if _, code, out := run("-namespace", ns, "-json", "locks", "/locks"); code != 5 {
		t.Errorf("without -auth: exit %d, want 5: %s", code, out)
	}

	// A's connection cut while it holds; the same session comes back.
	sidA := epochOf(t, sa).SessionID()
	px.Cut()
	waitFor(t, 10*time.Second, "A reconnected", func() bool {
		ep, err := connlink.Of(sa).Epoch(ctx)
		return err == nil && ep.SessionID() == sidA
	})
	require.NoError(t, ha.release(), "A's Release after a cut, digest-only parent")
	lb, ok := hb.granted(t, 10*time.Second, "B")
	if !ok {
		t.Fatalf("B not granted: %v", children(zc, queue))
	}
	hc := hold(ctx, mc)
	waitFor(t, 10*time.Second, "C queued", func() bool { return len(children(zc, queue)) == 2 })
	f.Expire(ctx, epochOf(t, sb))
	lc, ok := hc.granted(t, 10*time.Second, "C")
	if !ok {
		t.Fatalf("C not granted after B's expiry: %v", children(zc, queue))
	}
	recv(t, lb.Lost(), 10*time.Second, "B's Lost not closed after its expiry")
	q, code, out = run("-namespace", ns, "-auth", "svc:secret", "-json", "locks", "/locks")
	if code != 0 || len(q.Nodes) != 1 || q.Nodes[0].Status != "holds" || !strings.HasSuffix(lc.Path(), q.Nodes[0].Name) {
		t.Fatalf("command after B's expiry: code %d, %s (C holds %s)", code, out, lc.Path())
	}
	if err := hb.release(); err != nil {
		t.Errorf("B's Release after loss: %v", err)
	}
	require.NoError(t, hc.release())
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(zc, queue)) == 0 })
}
