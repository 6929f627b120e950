package locktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Deadlines under a partition: what RunDeadlines checks.
const (
	// partitionDeadline is the deadline of the acquires made across a
	// blackhole.
	partitionDeadline = 300 * time.Millisecond
	// PastDeadline is how long after its deadline an Acquire or
	// TryAcquire may return, whatever the connection does.
	PastDeadline = 250 * time.Millisecond
	// expirySession is the session timeout of the partition that never
	// heals (the server expires the session after it).
	expirySession = 2 * time.Second
)

// RunDeadlines runs the deadline suite against the lock type newLock
// builds, as subtests of t: an Acquire or TryAcquire with a 300 ms
// deadline, with the connection blackholed (zktest.Proxy) before its
// create, or right after the create is written (the server makes the node,
// the answer is lost), returns within PastDeadline of its deadline with an
// error matching context.DeadlineExceeded. Once the connection is back,
// the node it may have made is found and deleted in the background: no
// node of its session is left, and another session takes the lock. If the
// partition never heals, the session expires and its node goes with it.
// And with a bounded retry policy, an acquire that cannot learn its
// create's fate (the search for the node cut too) fails, and its node is
// still found and deleted in the background: another session takes the
// lock within GhostBound (testGhost, "LostCreateSearchCut"). RunFaults
// runs it too.
func RunDeadlines(t *testing.T, newLock NewLockFunc, opts ...Option) {
	newSuite(t, newLock, opts).runDeadlines(t)
}

func (s *suite) runDeadlines(t *testing.T) {
	// With WithLostWrite, only the cases that depend on it.
	later := s.cfg.lostWrite != 1
	for _, try := range []bool{false, true} {
		if try && s.cfg.noTry {
			continue
		}
		for _, mid := range []bool{false, true} {
			if later && !mid {
				continue
			}
			name := "Acquire"
			if try {
				name = "TryAcquire"
			}
			switch {
			case mid && s.cfg.lostWrite == 1:
				name += "BlackholedAfterCreate"
			case mid:
				name += fmt.Sprintf("BlackholedAfterWrite%d", s.cfg.lostWrite)
			default:
				name += "BlackholedBeforeCreate"
			}
			t.Run("Deadline"+name, func(t *testing.T) { s.testDeadlineHealed(t, try, mid) })
		}
	}
	if !later {
		t.Run("DeadlineBlackholedWhileQueued", s.testDeadlineWhileQueued)
	}
	name := "LostCreateSearchCut"
	if later {
		name = fmt.Sprintf("LostWrite%dSearchCut", s.cfg.lostWrite)
	}
	t.Run(name, s.testGhost)
	t.Run("DeadlineBlackholeNeverHeals", s.testDeadlineNeverHeals)
}

// partitioned is one acquire across a blackhole: the lock's handle, its
// session through the proxy, and a session straight to the cluster.
type partitioned struct {
	path   string
	proxy  *zktest.Proxy
	sess   *conn.Session
	direct *conn.Session
	lk     Locker
	id     int64 // sess's session id
}

func (s *suite) partitioned(t *testing.T, name string, sessionTimeout time.Duration, opts ...conn.Option) partitioned {
	t.Helper()
	f := partitioned{path: UniquePath(s.cluster, name), proxy: zktest.NewProxy(t, s.cluster.Servers())}
	f.sess = Connect(t, f.proxy.Addrs(), sessionTimeout, opts...)
	f.direct = Connect(t, s.cluster.Servers(), s.cfg.sessionTimeout)
	f.lk = s.newLock(t, f.sess, f.path)
	warm(t, f.lk) // the lock's paths exist: the acquire's first write is its create
	f.id = sessionID(t, f.sess)
	return f
}

// blackholedAcquire blackholes f's proxy before the acquire's create (mid
// false) or right after it is written (mid true; WithLostWrite: after
// another of its requests), runs Acquire (or
// TryAcquire) with a partitionDeadline deadline, and checks that it
// returns in time with ctx's error. With mid, it also waits until the
// server has the node, so that the test is about a node that exists.
func (s *suite) blackholedAcquire(t *testing.T, f partitioned, try, mid bool) {
	t.Helper()
	if mid {
		f.proxy.BlackholeAfterWrites(s.cfg.lostWrite)
	} else {
		f.proxy.Blackhole()
	}
	ctx, cancel := context.WithTimeout(context.Background(), partitionDeadline)
	defer cancel()
	deadline, _ := ctx.Deadline()
	type res struct {
		l   *conn.Lease
		ok  bool
		err error
		at  time.Time
	}
	ch := make(chan res, 1)
	go func() {
		var r res
		if try {
			r.l, r.ok, r.err = f.lk.TryAcquire(ctx)
		} else {
			r.l, r.err = f.lk.Acquire(ctx)
			r.ok = r.l != nil
		}
		r.at = time.Now()
		ch <- r
	}()
	var r res
	select {
	case r = <-ch:
	case <-time.After(3 * s.cfg.sessionTimeout):
		f.proxy.Heal() // let it end, so that the test does not hang
		r = <-ch
	}
	past := r.at.Sub(deadline)
	t.Logf("returned %v past its %v deadline", past.Round(time.Millisecond), partitionDeadline)
	assert.ErrorIs(t, r.err, context.DeadlineExceeded)
	assert.False(t, r.ok)
	assert.Nil(t, r.l)
	assert.LessOrEqual(t, past, PastDeadline, "returned within its deadline plus %v", PastDeadline)
	assert.ErrorIs(t, f.lk.Release(Ctx(t, 10*time.Second)), lock.ErrNotHeld, "the handle holds nothing")
	if mid {
		var nodes []string
		WaitFor(t, 10*time.Second, "the server made the node whose answer is lost", func() bool {
			nodes = s.ownNodes(t, f)
			return len(nodes) > 0
		})
		t.Logf("nodes of the session across the blackhole: %v", nodes)
	}
}

// ownNodes lists the ephemeral nodes of f's session under f.path, read
// through the direct session.
func (s *suite) ownNodes(t *testing.T, f partitioned) []string {
	t.Helper()
	return OwnedBy(ephemeralsOrFail(t, f.direct, f.path), f.id)
}

// testDeadlineHealed: the acquire across a blackhole returns in time; once
// the blackhole heals, the node it may have made is deleted in the
// background (its session lives on), another session takes the lock, and
// the handle acquires again.
func (s *suite) testDeadlineHealed(t *testing.T, try, mid bool) {
	f := s.partitioned(t, "deadline", s.cfg.sessionTimeout)
	s.blackholedAcquire(t, f, try, mid)
	f.proxy.Heal()
	WaitFor(t, 20*time.Second, "no node of the abandoned acquire's session", func() bool {
		return len(s.ownNodes(t, f)) == 0
	})
	assert.Equal(t, f.id, sessionID(t, f.sess), "the session survived the partition")

	rival := s.newRival(t, f.direct, f.path)
	mustAcquire(t, rival, 10*time.Second)
	assert.Empty(t, s.ownNodes(t, f), "nothing of ours came back")
	mustRelease(t, rival, 10*time.Second)
	mustAcquire(t, f.lk, 20*time.Second)
	mustRelease(t, f.lk, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "nothing left")
}

// testDeadlineNeverHeals: the blackhole lasts: the acquire returns in
// time, the server expires the session, and its node goes with it; another
// session takes the lock.
func (s *suite) testDeadlineNeverHeals(t *testing.T) {
	f := s.partitioned(t, "deadline-expiry", expirySession)
	s.blackholedAcquire(t, f, false, true)
	WaitFor(t, 10*expirySession, "the session expired, and its node with it", func() bool {
		return len(s.ownNodes(t, f)) == 0
	})
	rival := s.newRival(t, f.direct, f.path)
	mustAcquire(t, rival, 10*time.Second)
	mustRelease(t, rival, 10*time.Second)
	f.proxy.Heal()
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "nothing left")
}

// testDeadlineWhileQueued: the acquire waits behind holders (rivals on the
// direct session) when the blackhole begins; it returns in time at its
// deadline, and its node, which it could not delete across the blackhole,
// is deleted in the background once the blackhole heals, while the
// holders still hold.
func (s *suite) testDeadlineWhileQueued(t *testing.T) {
	f := s.partitioned(t, "deadline-queued", s.cfg.sessionTimeout)
	rivals := s.holdAll(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	before := watchesSet(f.sess)
	res := acquireAsync(ctx, f.lk)
	if !WaitQueued(t, f.sess, before, 10*time.Second) {
		return
	}
	f.proxy.Blackhole()
	r, ok := await(t, res, 3*s.cfg.sessionTimeout, "Acquire across the blackhole")
	if !ok {
		f.proxy.Heal()
		r = <-res
	}
	past := r.at.Sub(deadline)
	t.Logf("returned %v past its deadline, waiting behind %d holder(s)", past.Round(time.Millisecond), len(rivals))
	assert.ErrorIs(t, r.err, context.DeadlineExceeded)
	assert.Nil(t, r.lease)
	assert.LessOrEqual(t, past, PastDeadline, "returned within its deadline plus %v", PastDeadline)

	f.proxy.Heal()
	WaitFor(t, 20*time.Second, "no node of the abandoned acquire's session", func() bool {
		return len(s.ownNodes(t, f)) == 0
	})
	for _, r := range rivals {
		mustRelease(t, r, 10*time.Second)
	}
	mustAcquire(t, f.lk, 20*time.Second)
	mustRelease(t, f.lk, 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, f.direct, f.path), "nothing left")
}

// holdAll makes rivals on f's direct session acquire until the lock is
// full: until another handle's TryAcquire says no (one rival for a lock
// without TryAcquire). It returns them, holding.
func (s *suite) holdAll(t *testing.T, f partitioned) []Locker {
	t.Helper()
	var rivals []Locker
	for range 4 {
		r := s.newRival(t, f.direct, f.path)
		mustAcquire(t, r, 10*time.Second)
		rivals = append(rivals, r)
		if s.cfg.noTry {
			break
		}
		probe := s.newLock(t, f.direct, f.path)
		_, ok, err := probe.TryAcquire(Ctx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("locktest: probe: %v", err)
		}
		if !ok {
			break
		}
		mustRelease(t, probe, 10*time.Second)
	}
	return rivals
}
