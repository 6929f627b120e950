package locktest

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// proxiedLock is a handle of the lock under test on a fresh path, over a
// session that goes through a proxy of its own, for the faults that the
// proxy makes (lost answers, cut connections, latency).
type proxiedLock struct {
	path   string
	proxy  *zktest.Proxy
	sess   *conn.Session // through proxy: lk's
	direct *conn.Session // straight to the cluster: for a rival or an observer
	lk     Locker
}

// proxied opens the sessions of a proxiedLock and makes its handle; all
// end in t.Cleanup.
func (s *suite) proxied(t *testing.T, name string) proxiedLock {
	t.Helper()
	f := proxiedLock{path: UniquePath(s.cluster, name), proxy: zktest.NewProxy(t, s.cluster.Servers())}
	f.sess = Connect(t, f.proxy.Addrs(), s.cfg.sessionTimeout)
	f.direct = Connect(t, s.cluster.Servers(), s.cfg.sessionTimeout)
	f.lk = s.newLock(t, f.sess, f.path)
	return f
}

// warm acquires and releases lk once, so that the lock's paths exist and
// the next acquire's first write is its create.
func warm(t *testing.T, lk Locker) {
	t.Helper()
	mustAcquire(t, lk, 10*time.Second)
	mustRelease(t, lk, 10*time.Second)
}
