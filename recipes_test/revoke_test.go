package recipes_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// curatorRevoke compiles testdata/revoke/CuratorRevoke.java and returns
// the java arguments that run it.
func curatorRevoke(t *testing.T) []string {
	t.Helper()
	cp := testzk.CompileCurator(t, "testdata/revoke/CuratorRevoke.java")
	return []string{"-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-cp", cp, "CuratorRevoke"}
}

// TestCuratorRevoker: Curator's real Revoker.attemptRevoke on the holder's
// node, with a waiter of ours queued behind it. On a sealed node (the
// default) the server refuses Curator's write (NoAuth); on a revocable one
// the write goes through and the holder's Revoked closes. Either way the
// holder keeps the lock and the waiter enters only after the release.
func TestCuratorRevoker(t *testing.T) {
	java := curatorRevoke(t)
	c := newZK(t)
	servers := strings.Join(c.Servers(), ",")
	for _, rec := range exclusiveRecipes() {
		if !rec.canRevoke {
			continue
		}
		for _, revocable := range []bool{false, true} {
			name := rec.name + map[bool]string{false: "/sealed", true: "/revocable"}[revocable]
			t.Run(name, func(t *testing.T) {
				ctx := locktest.Ctx(t, 90*time.Second)
				q := rec.queueBehind(t, ctx, c, locktest.UniquePath(c, "revoker-"+rec.name), revocable)
				hl, ws, w, before := q.hl, q.ws, q.w, q.watches
				lost, revoked := hl.Lost(), hl.Revoked()

				out, err := exec.CommandContext(ctx, "java", append(java, "revoke", servers, hl.Path())...).CombinedOutput()
				require.NoError(t, err, "%s", out)
				if !revocable {
					assert.Equal(t, "noauth", strings.TrimSpace(string(out)), "Curator's write into a sealed node")
					assert.False(t, isClosed(revoked))
				} else {
					assert.Equal(t, "revoked", strings.TrimSpace(string(out)))
					select {
					case <-revoked:
					case <-ctx.Done():
						t.Fatal("Revoked not closed after Curator's Revoker")
					}
					watching(t, ws, before) // the waiter looked again and watches again
				}
				assert.False(t, w.granted(), "the waiter got in while the holder holds: %v", w.err)
				assert.False(t, isClosed(lost), "the holder's lease is not lost: %v", hl.Err())
				require.NoError(t, q.holder.Release(ctx))
				w.enters(t, ctx, "after the release")
			})
		}
	}
}

// TestRevokeCuratorHolder: lock.Revoke writes "__REVOKE__" into the node of a
// Curator InterProcessMutex holder that called makeRevocable: its
// RevocationListener fires, it releases, and our waiter queued behind it
// enters.
func TestRevokeCuratorHolder(t *testing.T) {
	java := curatorRevoke(t)
	c := newZK(t)
	ctx := locktest.Ctx(t, 90*time.Second)
	path := locktest.UniquePath(c, "revoke-curator")
	cmd := exec.CommandContext(ctx, "java", append(java, "hold", strings.Join(c.Servers(), ","), path)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 8)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-ctx.Done():
			return "(timeout)"
		}
	}
	if l := next(); l != "acquired" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("curator did not acquire: %q %s", l, stderr.String())
	}

	s := dial(t, c.Servers())
	m, err := mutex.New(s, path)
	require.NoError(t, err)
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1, "Curator's holder")
	before := connlink.Of(s).Stats().WatchesSet
	w := acquireAsync(ctx, m)
	watching(t, s, before)
	require.NoError(t, lock.Revoke(ctx, s, ps[0].Node))
	assert.Equal(t, "revoke-requested", next(), "Curator's RevocationListener fired")
	assert.Equal(t, "released", next())
	w.enters(t, ctx, "after Curator's release")
	require.NoError(t, cmd.Wait(), "curator: %s", stderr.String())
}

// TestSemaphoreRevoke: with two leases, both held and a third contender
// waiting on the lease nodes, Revoke on a revocable holder's lease node
// closes that holder's Revoked and admits nobody; its release does. On a
// sealed lease node Revoke fails with lock.ErrNotRevocable.
func TestSemaphoreRevoke(t *testing.T) {
	c := newZK(t)
	for _, revocable := range []bool{false, true} {
		t.Run(map[bool]string{false: "sealed", true: "revocable"}[revocable], func(t *testing.T) {
			ctx := locktest.Ctx(t, 60*time.Second)
			path := locktest.UniquePath(c, "sem-revoke")
			var opts []lock.Option
			if revocable {
				opts = append(opts, lock.WithRevocable())
			}
			sessions := []*conn.Session{dial(t, c.Servers()), dial(t, c.Servers()), dial(t, c.Servers())}
			var sems []*semaphoremutex.Semaphore
			for _, s := range sessions {
				sem, err := semaphoremutex.NewSemaphore(s, path, 2, opts...)
				require.NoError(t, err)
				sems = append(sems, sem)
			}
			a, err := sems[0].Acquire(ctx)
			require.NoError(t, err)
			b, err := sems[1].Acquire(ctx)
			require.NoError(t, err)
			revoked := a.Revoked()
			before := connlink.Of(sessions[2]).Stats().WatchesSet
			w := acquireAsync(ctx, &semaphoreLock{s: sems[2], path: path})
			// The waiter holds the internal lock and watches both lease
			// nodes (two confirmed watches).
			before = watching(t, sessions[2], before+1)

			err = lock.Revoke(ctx, sessions[2], a.Path())
			if !revocable {
				require.ErrorIs(t, err, lock.ErrNotRevocable)
				assert.False(t, isClosed(revoked))
			} else {
				require.NoError(t, err)
				select {
				case <-revoked:
				case <-ctx.Done():
					t.Fatal("Revoked not closed")
				}
				watching(t, sessions[2], before) // the waiter watches the node again
			}
			assert.False(t, w.granted(), "a third holder got in: %v", w.err)
			assert.NoError(t, a.Err())
			require.NoError(t, sems[0].ReturnLease(ctx, a))
			w.enters(t, ctx, "after a release")
			require.NoError(t, sems[1].ReturnLease(ctx, b))
		})
	}
}
