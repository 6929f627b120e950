package attack_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
	"github.com/zkrecipes/zkrecipes/zktest"
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

	t.Run("mutex", func(t *testing.T) {
		m, _ := mutex.New(sn, "/m", lock.WithRevocable())
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		if ok, _, err := sn.Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its session: %v %v", l.Path(), ok, err)
		}
		ps, err := m.Participants(ctx)
		if err != nil || len(ps) != 1 || ps[0].Node != l.Path() {
			t.Errorf("Participants %+v (%v), want one with Node %q", ps, err, l.Path())
		}
		// The same lock through the full path, without a namespace.
		other, _ := mutex.New(sp, connlink.Of(sn).FullPath("/m"))
		_, ok, err := other.TryAcquire(ctx)
		if ok || err != nil {
			t.Errorf("TryAcquire of the same lock through its full path: ok=%v err=%v, want (false, nil)", ok, err)
			if ok {
				_ = other.Release(ctx)
			}
		}
		// GuardedWrite is namespaced.
		_, err = l.GuardedWrite(ctx, &zk.CreateRequest{Path: "/m-res", Data: []byte("x"), Acl: zk.WorldACL(zk.PermAll)})
		require.NoError(t, err)
		if ok, _, _ := zc.Exists(ns + "/m-res"); !ok {
			t.Errorf("GuardedWrite's create did not land at %s", ns+"/m-res")
		}
		rev := l.Revoked()
		if err := lock.Revoke(ctx, sn, ps[0].Node); err != nil {
			t.Errorf("Revoke(Participant.Node) under a namespace: %v", err)
		}
		select {
		case <-rev:
		case <-time.After(5 * time.Second):
			t.Errorf("Revoked not closed after Revoke(Participant.Node)")
		}
		require.NoError(t, m.Release(ctx))
	})
	t.Run("rwlock", func(t *testing.T) {
		rw, _ := rwlock.New(sn, "/rw")
		l, err := rw.WriteLock().Acquire(ctx)
		require.NoError(t, err)
		if ok, _, err := sn.Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its session: %v %v", l.Path(), ok, err)
		}
		other, _ := rwlock.New(sp, connlink.Of(sn).FullPath("/rw"))
		_, ok, err := other.ReadLock().TryAcquire(ctx)
		if ok || err != nil {
			t.Errorf("read TryAcquire through the full path while written: ok=%v err=%v", ok, err)
			if ok {
				_ = other.ReadLock().Release(ctx)
			}
		}
		require.NoError(t, rw.WriteLock().Release(ctx))
	})
	t.Run("semaphoremutex", func(t *testing.T) {
		m, _ := semaphoremutex.New(sn, "/s", lock.WithRevocable())
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		if ok, _, err := sn.Exists(ctx, l.Path()); !ok || err != nil {
			t.Errorf("Lease.Path %q not found through its session: %v %v", l.Path(), ok, err)
		}
		ps, err := m.Participants(ctx)
		if err != nil || len(ps) != 1 {
			t.Fatalf("Participants %+v (%v)", ps, err)
		}
		rev := l.Revoked()
		if err := lock.Revoke(ctx, sn, ps[0].Node); err != nil {
			t.Errorf("Revoke(Participant.Node %q) under a namespace: %v", ps[0].Node, err)
		}
		select {
		case <-rev:
		case <-time.After(5 * time.Second):
			t.Errorf("Revoked not closed after Revoke(Participant.Node %q), lease %q", ps[0].Node, l.Path())
		}
		other, _ := semaphoremutex.New(sp, connlink.Of(sn).FullPath("/s"))
		_, ok, err := other.TryAcquire(ctx)
		if ok || err != nil {
			t.Errorf("TryAcquire through the full path: ok=%v err=%v", ok, err)
			if ok {
				_ = other.Release(ctx)
			}
		}
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

// buildCmd builds the zkrecipes command (as `go install` would) into a
// temporary directory.
func buildCmd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zkrecipes")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = "../cmd/zkrecipes"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

type cmdQueue struct {
	Path  string `json:"path"`
	Nodes []struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Session string `json:"session"`
	} `json:"nodes"`
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
	bin := buildCmd(t)
	f := newFixture(t)
	ctx := ctxT(t, 60*time.Second)
	px := f.Proxy()
	ns := f.Path("r4-ns")
	acl := zk.DigestACL(zk.PermAll, "svc", "secret")
	opts := []conn.Option{conn.WithNamespace(ns), conn.WithDigestAuth("svc", "secret"), conn.WithACL(acl)}
	sa := f.SessionAt(px.Addrs(), opts...)
	sb := f.Session(opts...)
	sc := f.Session(opts...)
	// the namespace root, readable by the service only
	zc := f.Raw()
	require.NoError(t, zc.AddAuth("digest", []byte("svc:secret")))
	ensure(t, zc, zk.WorldACL(zk.PermAll), f.Root())
	ensure(t, zc, acl, ns)
	ma, _ := mutex.New(sa, "/locks/x")
	mb, _ := mutex.New(sb, "/locks/x")
	mc, _ := mutex.New(sc, "/locks/x")
	ha := hold(ctx, ma)
	la := ha.wait(t, 60*time.Second, "ha")
	hb := hold(ctx, mb)
	waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(zc, ns+"/locks/x")) == 2 })

	run := func(args ...string) (cmdQueue, int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-servers", strings.Join(f.Servers(), ","), "-timeout", "5s"}, args...)...)
		cmd.Env = append(os.Environ(), "ZK_AUTH=", "ZK_NAMESPACE=", "ZK_SERVERS=")
		out, err := cmd.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Queues []cmdQueue `json:"queues"`
		}
		if code == 0 {
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("json: %v\n%s", err, out)
			}
			if len(doc.Queues) != 1 {
				t.Fatalf("queues: %s", out)
			}
			return doc.Queues[0], 0, string(out)
		}
		return cmdQueue{}, code, string(out)
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
	var lb *conn.Lease
	select {
	case lb = <-hb.got:
	case err := <-hb.failed:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatalf("B not granted: %v", children(zc, ns+"/locks/x"))
	}
	hc := hold(ctx, mc)
	waitFor(t, 10*time.Second, "C queued", func() bool { return len(children(zc, ns+"/locks/x")) == 2 })
	ep := epochOf(t, sb)
	require.NoError(t, zktest.ExpireEpoch(ctx, f.Servers()[0], ep))
	var lc *conn.Lease
	select {
	case lc = <-hc.got:
	case err := <-hc.failed:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatalf("C not granted after B's expiry: %v", children(zc, ns+"/locks/x"))
	}
	select {
	case <-lb.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("B's Lost not closed after its expiry")
	}
	q, code, out = run("-namespace", ns, "-auth", "svc:secret", "-json", "locks", "/locks")
	if code != 0 || len(q.Nodes) != 1 || q.Nodes[0].Status != "holds" || !strings.HasSuffix(lc.Path(), q.Nodes[0].Name) {
		t.Fatalf("command after B's expiry: code %d, %s (C holds %s)", code, out, lc.Path())
	}
	if err := hb.release(); err != nil {
		t.Errorf("B's Release after loss: %v", err)
	}
	require.NoError(t, hc.release())
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(zc, ns+"/locks/x")) == 0 })
}
