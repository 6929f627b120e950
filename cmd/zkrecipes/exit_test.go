package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// TestHelp: -h prints the commands, every flag, the exit codes and the
// environment, and exits 0; never what the environment holds (ZK_AUTH is a
// password).
func TestHelp(t *testing.T) {
	t.Setenv("ZK_AUTH", "ops:hunter2")
	t.Setenv("ZK_SERVERS", "zk9:2181")
	_, stderr, code := command(t, "-h")
	assert.NotContains(t, stderr, "hunter2")
	assert.NotContains(t, stderr, "zk9")
	assert.Equal(t, exitOK, code)
	for _, want := range []string{"zkrecipes [flags] locks PATH", "zkrecipes [flags] leader PATH",
		"-servers", "-namespace", "-auth", "-json", "-watch", "-timeout", "-session-timeout",
		"3  no such path", "4  no server reachable", "5  authentication refused", "2  bad usage",
		"ZK_SERVERS", "ZK_NAMESPACE", "ZK_AUTH"} {
		assert.Contains(t, stderr, want)
	}
}

// TestExitCodes: each failure a script may test has its own exit status.
func TestExitCodes(t *testing.T) {
	for _, args := range [][]string{{}, {"locks"}, {"stuck", "/x"}, {"locks", "relative"}, {"-nope", "locks", "/x"}, {"-auth", "nocolon", "locks", "/x"}} {
		_, _, code := command(t, args...)
		assert.Equal(t, exitUsage, code, "args %q", args)
	}

	t0 := time.Now()
	_, stderr, code := command(t, "-servers", "127.0.0.1:1", "-timeout", "1s", "locks", "/x")
	assert.Equal(t, exitNoServer, code, stderr)
	assert.Less(t, time.Since(t0), 20*time.Second)

	c := testzk.Shared(t)
	srv := "-servers=" + servers(c.Servers())
	// The whole tree: /zookeeper, the server's own, is left out.
	_, stderr, code = command(t, srv, "locks", "/")
	assert.Equal(t, exitOK, code, "locks /: %s", stderr)

	root := testzk.Path(t, c, "exit")
	_, stderr, code = command(t, srv, "locks", root)
	assert.Equal(t, exitNoPath, code)
	assert.Contains(t, stderr, "no such path")
	_, _, code = command(t, srv, "leader", root)
	assert.Equal(t, exitNoPath, code)

	// A tree only a digest identity may read.
	s := testzk.Connect(t, c.Servers(), conn.WithDigestAuth("ops", "secret"))
	ep := testzk.Epoch(t, s)
	ctx := testzk.Ctx(t, time.Minute)
	require.NoError(t, connlink.Of(ep).CreateParents(ctx, root+"/x"))
	_, err := s.Create(ctx, root+"/locked", nil, 0, zk.DigestACL(zk.PermAll, "ops", "secret"))
	require.NoError(t, err)
	_, stderr, code = command(t, srv, "locks", root+"/locked")
	assert.Equal(t, exitAuth, code, stderr)
	_, stderr, code = command(t, srv, "locks", root)
	assert.Equal(t, exitAuth, code, "a subtree it may not read: %s", stderr)
	stdout, stderr, code := command(t, srv, "-auth", "ops:secret", "locks", root)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "no lock queues under "+root+"\n", stdout)

	// The namespace is a prefix the paths do not show.
	ns, rest, _ := strings.Cut(strings.TrimPrefix(root, "/"), "/")
	stdout, stderr, code = command(t, srv, "-auth", "ops:secret", "-namespace", "/"+ns, "locks", "/"+rest)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "no lock queues under /"+rest+"\n", stdout)
	t.Setenv("ZK_NAMESPACE", "/"+ns)
	t.Setenv("ZK_AUTH", "ops:secret")
	t.Setenv("ZK_SERVERS", servers(c.Servers()))
	_, stderr, code = command(t, "locks", "/"+rest)
	assert.Equal(t, exitOK, code, "from the environment: %s", stderr)
}

// TestLeaderOnAnotherRecipesPath: `zkrecipes leader` on a path that holds
// a mutex's, a read/write lock's or a semaphore's nodes and no election's
// says which recipe's they are and exits 2 (bad usage), in text, JSON and
// -watch, instead of "no leader"; an empty path is still "no leader", 0.
func TestLeaderOnAnotherRecipesPath(t *testing.T) {
	c := testzk.Shared(t)
	srv := "-servers=" + servers(c.Servers())
	root := testzk.Path(t, c, "notleader")
	s := testzk.Connect(t, c.Servers())
	ctx := testzk.Ctx(t, time.Minute)
	m, err := mutex.New(s, root+"/m")
	require.NoError(t, err)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	rw, err := rwlock.New(s, root+"/rw")
	require.NoError(t, err)
	_, err = rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	sem, err := semaphoremutex.NewSemaphore(s, root+"/sem", 2)
	require.NoError(t, err)
	_, err = sem.Acquire(ctx)
	require.NoError(t, err)
	for p, what := range map[string]string{root + "/m": "mutex", root + "/rw": "read/write lock", root + "/sem": "semaphore"} {
		for _, args := range [][]string{{"leader", p}, {"-json", "leader", p}} {
			stdout, stderr, code := command(t, append([]string{srv}, args...)...)
			assert.Equal(t, exitUsage, code, "%q: stdout %s, stderr %s", args, stdout, stderr)
			assert.Contains(t, stderr, p+" holds a "+what+"'s nodes, not an election's", "%q", args)
			assert.NotContains(t, stdout, "no leader", "%q", args)
		}
	}
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wout, werr bytes.Buffer
	code := run(ectx, []string{srv, "-watch", "leader", root + "/m"}, &wout, &werr, false)
	assert.Equal(t, exitUsage, code, "-watch: %s %s", wout.String(), werr.String())
	require.NoError(t, connlink.Of(testzk.Epoch(t, s)).CreateParents(ctx, root+"/empty/x"))
	stdout, stderr, code := command(t, srv, "leader", root+"/empty")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "no leader")
}
