package fault

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// The chaos run's domains: each has one lock path (multilock's two locks
// are on the mutex's and the semaphore mutex's paths: "mixed"), one znode
// register and one fenced store.
const (
	domMutex    = "mutex"
	domSemMutex = "semmutex"
	domRW       = "rwlock"
	domLeader   = "leader"
)

var chaosDomains = []string{domMutex, domSemMutex, domRW, domLeader}

// chaosLock is one way an actor takes a lock.
type chaosLock struct {
	name    string
	domains []string // the domains a grant holds, in the order of its leases
	mode    holdMode // modeExclusive or modeRead
	try     bool     // has TryAcquire
	revoke  bool     // has Revoke
	anyRel  bool     // any goroutine may release it (else: the holder's only)
	weight  int      // how often actors pick it, relative to the others
}

// chaosLocks: the handoff handles are picked twice as often as the others,
// so that a session's goroutines often queue on one node.
var chaosLocks = []chaosLock{
	{name: "mutex", domains: []string{domMutex}, mode: modeExclusive, try: true, revoke: true, weight: 2},
	{name: "mutex-handoff", domains: []string{domMutex}, mode: modeExclusive, try: true, revoke: true, weight: 4},
	{name: "semmutex", domains: []string{domSemMutex}, mode: modeExclusive, try: true, revoke: true, anyRel: true, weight: 2},
	{name: "semmutex-handoff", domains: []string{domSemMutex}, mode: modeExclusive, try: true, revoke: true, anyRel: true, weight: 4},
	{name: "rw-read", domains: []string{domRW}, mode: modeRead, try: true, revoke: true, weight: 2},
	{name: "rw-write", domains: []string{domRW}, mode: modeExclusive, try: true, revoke: true, weight: 2},
	{name: "multilock", domains: []string{domMutex, domSemMutex}, mode: modeExclusive, anyRel: true, weight: 2},
	{name: "leader", domains: []string{domLeader}, mode: modeExclusive, anyRel: true, weight: 2},
}

// The bound of the handoff handles: small, so that the node goes back to
// the queue often.
const (
	chaosHandoffPasses = 3
	chaosHandoffBudget = time.Second
)

// chaosHandle is one actor's handle on one chaosLock, opened on one
// session generation. cur is the grant held through it (nil: none).
type chaosHandle struct {
	lock    *chaosLock
	acquire func(ctx context.Context) ([]*conn.Lease, error)
	tryAcq  func(ctx context.Context) ([]*conn.Lease, bool, error)
	release func(ctx context.Context) error
	revoke  func(ctx context.Context, node string) error
	elect   *leader.Election // the leader lock's, for Run
	cur     atomic.Pointer[chaosGrant]
}

func chaosLockPaths(root string) map[string]string {
	return map[string]string{domMutex: root + "/mutex", domSemMutex: root + "/semmutex", domRW: root + "/rw", domLeader: root + "/leader"}
}

// openChaosHandles opens one handle per chaos lock on sess.
func openChaosHandles(sess *conn.Session, root string, actor int) (map[string]*chaosHandle, error) {
	paths := chaosLockPaths(root)
	one := func(l interface {
		Acquire(context.Context) (*conn.Lease, error)
		TryAcquire(context.Context) (*conn.Lease, bool, error)
		Release(context.Context) error
	}, revoke func(context.Context, string) error) *chaosHandle {
		return &chaosHandle{
			acquire: func(ctx context.Context) ([]*conn.Lease, error) {
				ls, err := l.Acquire(ctx)
				if err != nil {
					return nil, err
				}
				return []*conn.Lease{ls}, nil
			},
			tryAcq: func(ctx context.Context) ([]*conn.Lease, bool, error) {
				ls, ok, err := l.TryAcquire(ctx)
				if err != nil || !ok {
					return nil, ok, err
				}
				return []*conn.Lease{ls}, true, nil
			},
			release: l.Release,
			revoke:  revoke,
		}
	}
	out := map[string]*chaosHandle{}
	revoke := func(ctx context.Context, node string) error { return lock.Revoke(ctx, sess, node) }
	m, err := mutex.New(sess, paths[domMutex])
	if err != nil {
		return nil, err
	}
	out["mutex"] = one(m, revoke)
	mh, err := mutex.New(sess, paths[domMutex], lock.WithLocalHandoff(chaosHandoffPasses, chaosHandoffBudget))
	if err != nil {
		return nil, err
	}
	out["mutex-handoff"] = one(mh, revoke)
	sm, err := semaphoremutex.New(sess, paths[domSemMutex])
	if err != nil {
		return nil, err
	}
	out["semmutex"] = one(sm, revoke)
	smh, err := semaphoremutex.New(sess, paths[domSemMutex], lock.WithLocalHandoff(chaosHandoffPasses, chaosHandoffBudget))
	if err != nil {
		return nil, err
	}
	out["semmutex-handoff"] = one(smh, revoke)
	rw, err := rwlock.New(sess, paths[domRW])
	if err != nil {
		return nil, err
	}
	out["rw-read"] = one(rw.ReadLock(), revoke)
	out["rw-write"] = one(rw.WriteLock(), revoke)

	mlA, err := mutex.New(sess, paths[domMutex])
	if err != nil {
		return nil, err
	}
	mlB, err := semaphoremutex.New(sess, paths[domSemMutex])
	if err != nil {
		return nil, err
	}
	ml, err := multilock.New(mlA, mlB)
	if err != nil {
		return nil, err
	}
	out["multilock"] = &chaosHandle{acquire: ml.Acquire, release: ml.Release}

	el, err := leader.New(sess, paths[domLeader], fmt.Sprintf("actor-%d", actor))
	if err != nil {
		return nil, err
	}
	out["leader"] = &chaosHandle{
		acquire: func(ctx context.Context) ([]*conn.Lease, error) {
			l, err := el.Campaign(ctx)
			if err != nil {
				return nil, err
			}
			return []*conn.Lease{l}, nil
		},
		release: el.Resign,
		elect:   el,
	}
	for i := range chaosLocks {
		h := out[chaosLocks[i].name]
		if h == nil {
			return nil, fmt.Errorf("chaos run: no handle for %q", chaosLocks[i].name)
		}
		h.lock = &chaosLocks[i]
	}
	return out, nil
}
