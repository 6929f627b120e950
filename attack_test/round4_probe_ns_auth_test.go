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

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

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

// TestProbe4_NamespaceDigestUnderCutAndExpiry: sessions with
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
func TestProbe4_NamespaceDigestUnderCutAndExpiry(t *testing.T) {
	bin := buildCmd(t)
	c := zktest.New(t)
	ctx := ctxT(t, 60*time.Second)
	px := zktest.NewProxy(t, c.Servers())
	ns := c.Root() + "/r4-ns"
	acl := zk.DigestACL(zk.PermAll, "svc", "secret")
	opts := []conn.Option{conn.WithNamespace(ns), conn.WithDigestAuth("svc", "secret"), conn.WithACL(acl)}
	sa := session(t, px.Addrs(), opts...)
	sb := session(t, c.Servers(), opts...)
	sc := session(t, c.Servers(), opts...)
	// the namespace root, readable by the service only
	zc := raw(t, c)
	if err := zc.AddAuth("digest", []byte("svc:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create(c.Root(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := zc.Create(ns, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	ma, _ := mutex.New(sa, "/locks/x")
	mb, _ := mutex.New(sb, "/locks/x")
	mc, _ := mutex.New(sc, "/locks/x")
	ha := gAcquire(ctx, ma)
	var la *conn.Lease
	select {
	case la = <-ha.got:
	case err := <-ha.failed:
		t.Fatal(err)
	}
	hb := gAcquire(ctx, mb)
	waitFor(t, 10*time.Second, "B queued", func() bool { return len(children(zc, ns+"/locks/x")) == 2 })

	run := func(args ...string) (cmdQueue, int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-servers", strings.Join(c.Servers(), ","), "-timeout", "5s"}, args...)...)
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
		ep, err := sa.Epoch(ctx)
		return err == nil && ep.SessionID() == sidA
	})
	if err := ha.release(); err != nil {
		t.Fatalf("A's Release after a cut, digest-only parent: %v", err)
	}
	var lb *conn.Lease
	select {
	case lb = <-hb.got:
	case err := <-hb.failed:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatalf("B not granted: %v", children(zc, ns+"/locks/x"))
	}
	hc := gAcquire(ctx, mc)
	waitFor(t, 10*time.Second, "C queued", func() bool { return len(children(zc, ns+"/locks/x")) == 2 })
	ep := epochOf(t, sb)
	if err := zktest.ExpireEpoch(ctx, c.Servers()[0], ep); err != nil {
		t.Fatal(err)
	}
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
	if err := hc.release(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "no node left", func() bool { return len(children(zc, ns+"/locks/x")) == 0 })
}
