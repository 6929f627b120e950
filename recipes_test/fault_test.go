package recipes_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes_test/internal/fault"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestFaultRun runs many clients on separate sessions against a three-server
// ensemble, taking the mutex, both sides of the read/write lock, a
// three-lease semaphore, the semaphore mutex, the naive exclusive lock, a
// multilock over two mutexes, a leader election, and the mutex and the
// semaphore mutex with in-process handoff (WithLocalHandoff; on the plain
// ones' paths, two goroutines of the client's session at once, so that the
// lock passes between them without ZooKeeper), while a seeded random
// schedule injects faults:
// leader and follower kills and restarts, server pauses, one client's
// connection blackholed for longer or shorter than its session timeout,
// forced session expiry, a connection reset right after a create, and a
// third-party write (a raw go-zookeeper client of its own setting the data
// of a holder's lock node). Then it checks mutual exclusion (hold
// intervals, guarded writes, counters against ledgers), liveness once the
// faults stop, and that nothing is left behind (nodes, watches; goroutines
// in TestMain), and that no node of a recipe with in-process handoff was
// granted more often than its bound allows. It cannot pass by doing nothing: it fails when a fault
// kind was applied too rarely, a recipe acquired too rarely under faults, a
// recipe with in-process handoff handed over in the process too rarely, or
// an acquire failed with an error other than the expected ones (see
// requireFigures and acquireFailed).
//
// The seed is fixed (ZKRECIPES_FAULT_SEED overrides it) and printed, so a
// failure can be replayed; ZKRECIPES_FAULT_DURATION sets the length of the
// fault phase (default 90s). The interleaving of clients and faults still
// depends on timing, so a replay draws the same schedule, not the same run.
func TestFaultRun(t *testing.T) {
	if testing.Short() {
		fault.SkipOrFail(t, "fault run: skipped under -short")
	}
	fault.Run(t, faultCluster(t, "fault run"))
}

// TestFaultRunLong is the long fault run, in rounds of five minutes with
// seeds seed, seed+1, ... on one ensemble; opt in with
// ZKRECIPES_FAULT_LONG=1 (and a -timeout above the duration), e.g.
//
//	ZKRECIPES_FAULT_LONG=1 ZKRECIPES_FAULT_DURATION=2h \
//	  go test -race -timeout 0 -run TestFaultRunLong -v ./recipes_test/
//
// The seed is ZKRECIPES_FAULT_SEED or drawn from the clock; each round
// logs its own seed, which replays it in TestFaultRun.
func TestFaultRunLong(t *testing.T) {
	if os.Getenv(fault.EnvFaultLong) != "1" {
		t.Skipf("long fault run: opt in with %s=1 (length: ZKRECIPES_FAULT_DURATION, default 30m)", fault.EnvFaultLong)
	}
	fault.RunLong(t, faultCluster(t, "long fault run"))
}

// TestChaos is the randomized "anything goes" run: actors (three
// goroutines on each of three sessions, and one on a fourth session with
// a retry policy of one attempt) call the public operations of mutex
// (with and without WithLocalHandoff on one path), semaphoremutex
// (likewise), rwlock,
// multilock (over the mutex's and the semaphore mutex's paths) and
// leader in a seeded random order: Acquire with deadlines and cancels,
// TryAcquire, Release (also of another goroutine's handle), Revoke of any
// grant's node through any session (the holder's own included),
// Campaign/Resign and Run, Session.Close then a new session, Lost,
// Revoked, Err, Fence, GuardedWrite and CheckOp. A bystander (a raw
// go-zookeeper client) writes into and deletes lock nodes, and the fault
// run's catalogue runs underneath (kills, pauses, blackholes, expiry,
// cut-after-create) with a lost create answer of the one-attempt session.
//
// Checked two ways: at the API, no two conflicting grants of a lock
// report held (not released, Err() == nil) at once, outside the windows
// of a session expiry (its size measured and bounded by the session
// timeout) and of a bystander's delete; no lock stays without a holder
// while acquires wait for longer than ZKRECIPES_CHAOS_STUCK (default
// 20 s: five session timeouts; legitimate gaps of up to 12.4 s were seen
// under load, a ghost contender stays for as long as its session lives).
// At the resource: every holder makes read-modify-writes of a znode
// register through GuardedWrite and of a store outside ZooKeeper that
// refuses lower fencing tokens (Fence.Compare); both histories are checked
// for linearizability with Porcupine, and a failing one is written as its
// HTML visualization (the path and the seed are printed).
//
// ZKRECIPES_CHAOS_SEED and ZKRECIPES_CHAOS_DURATION (default 2m) set the
// seed and the length; a replay starts from the same random streams, but
// the choices depend on timing, so a run does not repeat exactly.
// ZKRECIPES_CHAOS_WEIGHTS, _FAULTS, _LOCKS and _NO_BYSTANDER narrow the
// run to reach a bug sooner.
func TestChaos(t *testing.T) {
	if testing.Short() {
		fault.SkipOrFail(t, "chaos run: skipped under -short")
	}
	fault.Chaos(t, faultCluster(t, "chaos run"))
}

// faultCluster starts the three-server ensemble of a fault or chaos run;
// an external ensemble, which cannot be faulted, skips the test (fails it
// under CI=true).
func faultCluster(t *testing.T, run string) *zktest.Cluster {
	c := newZK(t, zktest.WithServers(3))
	if c.Backend() == zktest.BackendExternal {
		fault.SkipOrFail(t, fmt.Sprintf("%s: the %s backend cannot kill, pause or restart servers (ZK_BACKEND=docker or local can)", run, c.Backend()))
	}
	return c
}
