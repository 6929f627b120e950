package fault

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// holdMode says who else may hold a domain together with a holder.
type holdMode int

const (
	modeExclusive holdMode = iota // nobody else (a mutex, the write side)
	modeRead                      // other readers, no exclusive holder
	modeShared                    // at most the domain's capacity of holders
)

func (m holdMode) String() string {
	return [...]string{"exclusive", "read", "shared"}[m]
}

// faultRecipe is one way a fault-run client takes a lock. Recipes on the
// same domain share a lock path, a counter and a ledger.
type faultRecipe struct {
	name   string
	domain string
	mode   holdMode
	weight int // how often clients pick it, relative to the others
	// paired: the handle has in-process handoff (WithLocalHandoff), and a
	// client's turn on it runs on two goroutines of its session at once
	// (the client's and its twin's, faultClient.turn), so that the lock
	// passes between them without ZooKeeper.
	paired bool
}

// faultRecipes are the locks the fault run exercises.
var faultRecipes = []faultRecipe{
	{name: "mutex", domain: "mutex", mode: modeExclusive, weight: 3},
	{name: "rwlock-read", domain: "rwlock", mode: modeRead, weight: 3},
	{name: "rwlock-write", domain: "rwlock", mode: modeExclusive, weight: 2},
	{name: "semaphore", domain: "semaphore", mode: modeShared, weight: 3},
	{name: "multilock", domain: "multilock", mode: modeExclusive, weight: 2},
	{name: "semmutex", domain: "semmutex", mode: modeExclusive, weight: 1},
	{name: "exclusive", domain: "exclusive", mode: modeExclusive, weight: 1},
	{name: "leader", domain: "leader", mode: modeExclusive, weight: 2},
	{name: "mutex-cohort", domain: "mutex", mode: modeExclusive, weight: 2, paired: true},
	{name: "semmutex-cohort", domain: "semmutex", mode: modeExclusive, weight: 1, paired: true},
}

// The bound of the paired recipes' in-process handoff: a turn makes at
// most one local handoff, so the pass bound is never reached; the budget
// is, when faults stretch a hold.
const (
	faultHandoffPasses = 2
	faultHandoffBudget = time.Second
)

// semaphoreLeases is the capacity of the "semaphore" domain.
const semaphoreLeases = 3

// faultDomains are the distinct domains of faultRecipes, in order.
func faultDomains() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range faultRecipes {
		if !seen[r.domain] {
			seen[r.domain] = true
			out = append(out, r.domain)
		}
	}
	return out
}

// domainCapacity is how many modeShared holders a domain admits.
func domainCapacity(domain string) int {
	if domain == "semaphore" {
		return semaphoreLeases
	}
	return 1
}

// faultLockPaths are the lock paths (parents of lock and lease nodes, and
// the nodes between them and root) that openRecipes uses under root.
func faultLockPaths(root string) []string {
	var out []string
	for _, p := range []string{"/mutex", "/rw", "/ml-a", "/excl", "/leader"} {
		out = append(out, root+p)
	}
	for _, p := range []string{"/sem", "/ml-b", "/semmutex"} { // semaphoremutex: locks/ and leases/ below
		out = append(out, root+p+"/locks", root+p+"/leases")
	}
	return out
}

// grant is one successful acquire through a recipe: the leases (a
// guarded write goes through the first, with a check on each other one),
// the channel that closes when the grant is no longer safe, and how to
// give it back.
type grant struct {
	leases  []*conn.Lease
	lost    <-chan struct{}
	release func(context.Context) error
}

// acquirer takes one recipe's lock for one client.
type acquirer func(ctx context.Context) (*grant, error)

// openRecipes makes one client's handles on every recipe under root. Each
// handle is used by one goroutine only (the mutex and the read/write lock
// are owned per goroutine): a client's twin, on the same session, has
// handles of its own, and its paired handles share the in-process handoff
// with the client's (same session, path and bound).
func openRecipes(sess *conn.Session, root string, client int) (map[string]acquirer, error) {
	m, err := mutex.New(sess, root+"/mutex")
	if err != nil {
		return nil, err
	}
	mc, err := mutex.New(sess, root+"/mutex", lock.WithLocalHandoff(faultHandoffPasses, faultHandoffBudget))
	if err != nil {
		return nil, err
	}
	rw, err := rwlock.New(sess, root+"/rw")
	if err != nil {
		return nil, err
	}
	sem, err := semaphoremutex.NewSemaphore(sess, root+"/sem", semaphoreLeases)
	if err != nil {
		return nil, err
	}
	mlA, err := mutex.New(sess, root+"/ml-a")
	if err != nil {
		return nil, err
	}
	mlB, err := semaphoremutex.New(sess, root+"/ml-b")
	if err != nil {
		return nil, err
	}
	ml, err := multilock.New(mlA, mlB)
	if err != nil {
		return nil, err
	}
	sm, err := semaphoremutex.New(sess, root+"/semmutex")
	if err != nil {
		return nil, err
	}
	smc, err := semaphoremutex.New(sess, root+"/semmutex", lock.WithLocalHandoff(faultHandoffPasses, faultHandoffBudget))
	if err != nil {
		return nil, err
	}
	ex, err := exclusive.New(sess, root+"/excl")
	if err != nil {
		return nil, err
	}
	el, err := leader.New(sess, root+"/leader", fmt.Sprintf("client-%d", client))
	if err != nil {
		return nil, err
	}

	// single adapts a lock with one lease and a Release(ctx).
	type single interface {
		Acquire(context.Context) (*conn.Lease, error)
		Release(context.Context) error
	}
	one := func(lk single) acquirer {
		return func(ctx context.Context) (*grant, error) {
			l, err := lk.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return &grant{leases: []*conn.Lease{l}, lost: l.Lost(), release: lk.Release}, nil
		}
	}
	out := map[string]acquirer{
		"mutex":           one(m),
		"rwlock-read":     one(rw.ReadLock()),
		"rwlock-write":    one(rw.WriteLock()),
		"semmutex":        one(sm),
		"mutex-cohort":    one(mc),
		"semmutex-cohort": one(smc),
		"exclusive":       one(ex),
		"leader":          one(campaigner{el}),
		"semaphore": func(ctx context.Context) (*grant, error) {
			l, err := sem.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return &grant{leases: []*conn.Lease{l}, lost: l.Lost(),
				release: func(ctx context.Context) error { return sem.ReturnLease(ctx, l) }}, nil
		},
		"multilock": func(ctx context.Context) (*grant, error) {
			ls, err := ml.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return &grant{leases: ls, lost: ml.Lost(), release: ml.Release}, nil
		},
	}
	for _, r := range faultRecipes {
		if out[r.name] == nil {
			return nil, fmt.Errorf("fault run: no handle for recipe %q", r.name)
		}
	}
	return out, nil
}

// campaigner makes an election one of the fault run's locks: a term is a
// grant (at most one leader at any instant, like a mutex's holder).
type campaigner struct{ e *leader.Election }

func (c campaigner) Acquire(ctx context.Context) (*conn.Lease, error) { return c.e.Campaign(ctx) }
func (c campaigner) Release(ctx context.Context) error                { return c.e.Resign(ctx) }
