package attack_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/lock"
)

// TestFenceGrowsAcrossHandoffsAndSessions checks conn.Fence's "grows
// strictly with every grant of a lock, in every configuration, grants
// passed between goroutines of one process without ZooKeeper (the
// recipes' in-process handoff, WithLocalHandoff) included": goroutines of
// two sessions, on handles with and without local handoff (and labels,
// which a handoff keeps), take the lock in turn; each writes its Fence to
// the store while it holds. No holder's write may be refused.
func TestFenceGrowsAcrossHandoffsAndSessions(t *testing.T) {
	f := newFixture(t)
	for _, recipe := range []string{"mutex", "semaphoremutex"} {
		t.Run(recipe, func(t *testing.T) {
			f := f.In(t)
			ss := []*conn.Session{f.Session(), f.Session()}
			path := f.Path("fence-" + recipe)
			ctx := ctxT(t, 90*time.Second)
			var st fenceStore
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := 0; g < 6; g++ {
				kind := recipe + "-handoff"
				if g == 5 {
					kind = recipe // a plain handle beside the handoff ones
				}
				lk := newLocker(t, kind, ss[g%2], path, g)
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					lctx := lock.WithLabel(ctx, fmt.Sprintf("g%d", g))
					for i := 0; i < 8; i++ {
						l, err := lk.Acquire(lctx)
						if err != nil {
							errs <- fmt.Errorf("g%d acquire: %w", g, err)
							return
						}
						fe, err := l.Fence(ctx)
						if err != nil {
							errs <- fmt.Errorf("g%d fence: %w", g, err)
						} else {
							st.write(fmt.Sprintf("g%d#%d", g, i), fe)
						}
						if err := lk.Release(ctx); err != nil {
							errs <- fmt.Errorf("g%d release: %w", g, err)
							return
						}
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			t.Logf("%d grants fenced (%d by local handoff), greatest %v", st.n, st.passes, st.max)
			require.NotZero(t, st.passes, "no local handoff happened: the test proves nothing")
			require.Empty(t, st.refused, "grants whose Fence was not above the greatest seen")
			require.Equal(t, 48, st.n)
		})
	}
}

// TestFenceDowngradeThenNewReaderAndWriter: a write grant, a downgrade
// (twice: release the read and downgrade again) and, after the write
// release, a writer of another session: each grant's Fence is above the
// one before, as a store that fences writes needs.
func TestFenceDowngradeThenNewReaderAndWriter(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 30*time.Second)
	path := f.Path("fence-rw")
	var st fenceStore
	rwA := newRW(t, f.Session(), path)
	wA, r1 := downgrade(t, ctx, rwA)
	st.write("write", fenceOf(t, ctx, wA))
	st.write("downgrade 1", fenceOf(t, ctx, r1))
	require.NoError(t, rwA.ReadLock().Release(ctx))
	r2, err := rwA.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	f2 := fenceOf(t, ctx, r2)
	st.write("downgrade 2", f2)
	hb := hold(ctx, newRW(t, f.Session(), path).WriteLock())
	hb.notGranted(t, 300*time.Millisecond, "B granted while A holds")
	require.NoError(t, rwA.WriteLock().Release(ctx))
	// A still reads; its read fence stays
	require.Equal(t, 0, fenceOf(t, ctx, r2).Compare(f2), "the read grant's Fence stays after the write release")
	require.NoError(t, rwA.ReadLock().Release(ctx))
	lb := hb.wait(t, 10*time.Second, "B")
	st.write("B's write", fenceOf(t, ctx, lb))
	require.Empty(t, st.refused)
	require.Equal(t, 4, st.n)
	require.NoError(t, hb.release())
}

// TestLocalHandoffAfterExpiryGrantsNewNode: A holds a local-handoff lock
// (with a label), B of the same session queues in the process; the server
// expires the session. WithLocalHandoff's "It is not passed on once its
// epoch ended": B's grant is on a new node of the new epoch, labelled by
// B's acquire, with a Fence above A's, and its guarded write commits.
func TestLocalHandoffAfterExpiryGrantsNewNode(t *testing.T) {
	f := newFixture(t)
	for _, recipe := range []string{"mutex-handoff", "semaphoremutex-handoff"} {
		t.Run(recipe, func(t *testing.T) {
			f := f.In(t)
			ctx := ctxT(t, 40*time.Second)
			s := f.Session()
			path := f.Path("exp-" + recipe)
			a := newLocker(t, recipe, s, path, 0)
			b := newLocker(t, recipe, s, path, 1)
			la, err := a.Acquire(lock.WithLabel(ctx, "a"))
			require.NoError(t, err)
			fa := fenceOf(t, ctx, la)
			hb := hold(lock.WithLabel(ctx, "b"), b)
			hb.notGranted(t, 200*time.Millisecond, "b granted while a holds")
			f.Expire(ctx, la.Epoch())
			recv(t, la.Lost(), 10*time.Second, "a's lease not lost after expiry")
			require.NoError(t, a.Release(ctx))
			lb := hb.wait(t, 15*time.Second, "b")
			fb := fenceOf(t, ctx, lb)
			t.Logf("a %v, b %v", fa, fb)
			require.Equal(t, 1, fb.Compare(fa), "b's fence above a's")
			require.NotEqual(t, fa.Zxid, fb.Zxid, "b's grant is on a node of the new epoch")
			require.Zero(t, fb.Pass)
			require.Contains(t, string(f.Data(lb.Path())), `"label":"b"`, "b's node")
			require.NoError(t, guardedCreate(ctx, lb, path+"-written"))
			require.NoError(t, hb.release())
		})
	}
}
