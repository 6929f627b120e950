package locktest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// testTryAcquireRace: N TryAcquire at once on N sessions; exactly one wins,
// the losers leave nothing, and after the release nothing is left.
func (s *suite) testTryAcquireRace(t *testing.T) {
	const n = 10
	path := UniquePath(s.cluster, "try")
	sessions := ConnectN(t, s.cluster.Servers(), s.cfg.sessionTimeout, n+1)
	observer := sessions[n]
	locks := make([]Locker, n)
	for i := range locks {
		locks[i] = s.newLock(t, sessions[i], path)
	}

	ctx := Ctx(t, 30*time.Second)
	type answer struct {
		lease *conn.Lease
		ok    bool
		err   error
	}
	answers := make([]answer, n)
	start := make(chan struct{}) // closed to let every TryAcquire go at once
	var wg sync.WaitGroup
	for i, lk := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			l, ok, err := lk.TryAcquire(ctx)
			answers[i] = answer{l, ok, err}
		}()
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("contender %d: TryAcquire: %v", i, a.err)
		case a.ok && a.lease == nil:
			t.Errorf("contender %d: TryAcquire won with a nil lease", i)
		case !a.ok && a.lease != nil:
			t.Errorf("contender %d: TryAcquire lost but returned a lease", i)
		case a.ok && winner >= 0:
			t.Errorf("contenders %d and %d both won TryAcquire", winner, i)
		case a.ok:
			winner = i
		}
	}
	if !assert.GreaterOrEqual(t, winner, 0, "exactly one TryAcquire wins") {
		return
	}
	left := ephemeralsOrFail(t, observer, path)
	for i := range locks {
		if i != winner {
			assert.Empty(t, OwnedBy(left, sessionID(t, sessions[i])), "loser %d left a node", i)
		}
	}
	assert.NotEmpty(t, OwnedBy(left, answers[winner].lease.Epoch().SessionID()), "the winner holds a node")

	// While it is held, another TryAcquire fails cleanly, even on the
	// winner's own session.
	other := s.newLock(t, sessions[winner], path)
	l, ok, err := other.TryAcquire(ctx)
	assert.NoError(t, err)
	assert.False(t, ok, "TryAcquire while held")
	assert.Nil(t, l)

	mustRelease(t, locks[winner], 10*time.Second)
	assert.Empty(t, ephemeralsOrFail(t, observer, path), "no ephemeral node left after the release")
	assert.True(t, isClosed(answers[winner].lease.Lost()), "a released lease is Lost")

	// And then it can be taken again.
	l, ok, err = locks[(winner+1)%n].TryAcquire(ctx)
	if assert.NoError(t, err) && assert.True(t, ok, "TryAcquire after the release") {
		assert.NotNil(t, l)
		mustRelease(t, locks[(winner+1)%n], 10*time.Second)
	}
}

// sessionID is the id of s's current epoch.
func sessionID(t testing.TB, s *conn.Session) int64 {
	t.Helper()
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	ep, err := connlink.Of(s).Epoch(ctx)
	if err != nil {
		t.Fatalf("locktest: epoch: %v", err)
	}
	return ep.SessionID()
}
