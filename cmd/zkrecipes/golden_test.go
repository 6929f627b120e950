package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestLocksGolden builds a fixed lock tree with mixed holders and waiters,
// ours (mutex, read/write lock, semaphore, leader), Curator's (a mutex
// waiter, a LeaderLatch follower) and kazoo's (a mutex waiter), one at a
// time so that the queue order is known (and a one-lease semaphore, a
// mutex named "locks"), and compares what `zkrecipes
// locks` and `zkrecipes leader` print, text and JSON, with
// testdata/locks.golden (session ids, ages, uuids, host, pid and address
// normalised).
func TestLocksGolden(t *testing.T) {
	cp := testzk.CompileCurator(t, "testdata/CuratorWaiter.java", "../../recipes_test/testdata/interop/CuratorLatch.java")
	err := exec.Command("/usr/bin/python3", "-c", "import kazoo.recipe.lock").Run()
	testzk.Need(t, "kazoo (apt-get install python3-kazoo)", err)
	c := testzk.Shared(t)
	root := testzk.Path(t, c, "app")
	ss := testzk.ConnectN(t, c.Servers(), 6)

	// /orders: our mutex holds; Curator, kazoo and a raw node of unknown
	// data wait.
	orders := root + "/orders"
	m, err := mutex.New(ss[0], orders)
	require.NoError(t, err)
	contend(t, m).waitHeld(t)
	peer(t, "java", "-Xmx64m", "-cp", cp, "CuratorWaiter", servers(c.Servers()), orders)
	waitNodes(t, ss[0], orders, 2)
	peer(t, "/usr/bin/python3", "testdata/kazoo_waiter.py", servers(c.Servers()), orders, "worker-7")
	waitNodes(t, ss[0], orders, 3)
	ctx := testzk.Ctx(t, time.Minute)
	_, err = ss[5].Create(ctx, orders+"/_c_6f1b1c8e-2b7a-4f5e-9d3c-0a1b2c3d4e5f-lock-", []byte{0, 1, 2}, zk.FlagEphemeral|zk.FlagSequence, connlink.Of(ss[5]).ACL())
	require.NoError(t, err)

	// /catalog: two readers hold, a writer waits, a reader behind it too.
	catalog := root + "/catalog"
	for i, write := range []bool{false, false, true, false} {
		rw, err := rwlock.New(ss[i], catalog)
		require.NoError(t, err)
		l := rw.ReadLock()
		if write {
			l = rw.WriteLock()
		}
		k := contend(t, l)
		if i < 2 {
			k.waitHeld(t)
		} else {
			waitNodes(t, ss[0], catalog, i+1)
		}
	}

	// /pool: a semaphore of 2 leases, both taken; a third contender is
	// next.
	pool := root + "/pool"
	for i := 0; i < 3; i++ {
		sem, err := semaphoremutex.NewSemaphore(ss[i], pool, 2)
		require.NoError(t, err)
		k := contendWith(t, sem.Acquire, sem.ReturnLease)
		if i < 2 {
			k.waitHeld(t)
		} else {
			waitNodes(t, ss[0], pool+"/locks", 1)
		}
	}

	// /reports: a one-lease semaphore of ours (semaphoremutex.Mutex) holds
	// with its internal lock node, one waits behind it.
	reports := root + "/reports"
	for i := 0; i < 2; i++ {
		sm, err := semaphoremutex.New(ss[4+i], reports)
		require.NoError(t, err)
		k := contend(t, sm)
		if i == 0 {
			k.waitHeld(t)
		} else {
			waitNodes(t, ss[0], reports+"/locks", 2)
		}
	}

	// /jobs/locks: a mutex that happens to be called "locks" is a mutex.
	jobs := root + "/jobs/locks"
	jm, err := mutex.New(ss[5], jobs)
	require.NoError(t, err)
	contend(t, jm).waitHeld(t)

	// /election: ours leads, Curator's LeaderLatch follows.
	election := root + "/election"
	e, err := leader.New(ss[3], election, "billing-1")
	require.NoError(t, err)
	contendWith(t, e.Campaign, func(ctx context.Context, _ *conn.Lease) error { return e.Resign(ctx) }).waitHeld(t)
	peer(t, "java", "-Xmx64m", "-cp", cp, "CuratorLatch", servers(c.Servers()), election, "billing-curator", "8000")
	waitNodes(t, ss[0], election, 2)

	srv := "-servers=" + servers(c.Servers())
	var got strings.Builder
	for _, args := range [][]string{{"locks", root}, {"leader", election}, {"leader", "-json", election}, {"locks", root + "/jobs"}} {
		stdout, stderr, code := command(t, append([]string{srv}, args...)...)
		require.Equal(t, 0, code, "stderr: %s", stderr)
		fmt.Fprintf(&got, "$ zkrecipes %s\n%s\n", strings.Join(args, " "), stdout)
	}
	t.Logf("as printed:\n%s", got.String())
	compareGolden(t, "testdata/locks.golden", normalise(got.String(), root))

	// The JSON of locks says the same as the text.
	stdout, _, code := command(t, srv, "-json", "locks", root)
	require.Equal(t, 0, code)
	var v LocksView
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	var summary []string
	for _, q := range v.Queues {
		for _, n := range q.Nodes {
			summary = append(summary, fmt.Sprintf("%s %s %s %s", strings.TrimPrefix(q.Path, root), n.Status, n.Kind, n.Owner.Client))
			assert.NotEqual(t, "0x0", n.Session, "%s: an ephemeral node has an owner", n.Path)
			assert.WithinDuration(t, time.Now(), n.Created, 10*time.Minute, "%s: created", n.Path)
		}
	}
	assert.Equal(t, []string{
		"/catalog holds read zkrecipes", "/catalog holds read zkrecipes", "/catalog waits write zkrecipes", "/catalog waits read zkrecipes",
		"/election holds leader latch", "/election waits leader latch",
		"/jobs/locks holds mutex zkrecipes",
		"/orders holds mutex zkrecipes", "/orders waits mutex curator", "/orders waits mutex kazoo", "/orders waits mutex unknown",
		"/pool holds semaphore lease zkrecipes", "/pool holds semaphore lease zkrecipes", "/pool next semaphore lock zkrecipes",
		"/reports holds semaphore lock zkrecipes", "/reports waits semaphore lock zkrecipes",
	}, fixLeader(summary))
}

// fixLeader maps the election's leads/follows to holds/waits, for the
// summary's one vocabulary.
func fixLeader(s []string) []string {
	r := strings.NewReplacer(" leads ", " holds ", " follows ", " waits ")
	for i := range s {
		s[i] = r.Replace(s[i])
	}
	return s
}

// normalise replaces what differs from run to run: the root path, session
// ids (numbered in order of appearance), ages, uuids and hex ids, host, pid,
// Curator's address, times; runs of spaces (tabwriter's alignment follows
// their widths) become one.
func normalise(s, root string) string {
	s = strings.ReplaceAll(s, root, "/ROOT")
	sessions := map[string]string{}
	s = regexp.MustCompile(`0x[0-9a-f]+`).ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := sessions[id]; !ok {
			sessions[id] = fmt.Sprintf("S%d", len(sessions)+1)
		}
		return sessions[id]
	})
	for _, r := range []struct{ re, to string }{
		{`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`, "UUID"},
		{`[0-9a-f]{32}`, "HEX32"},
		{`\b\d+(\.\d+)?(h|m|s|ms)(\d+(\.\d+)?(m|s))*\b`, "AGE"},
		{`pid=\d+`, "pid=PID"},
		{`"pid": \d+`, `"pid": PID`},
		{`address=\S+`, "address=ADDR"},
		{`"created": "[^"]+"`, `"created": "TIME"`},
		{` {2,}`, " "},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.to)
	}
	if h, err := os.Hostname(); err == nil {
		s = strings.ReplaceAll(s, h, "HOST")
	}
	return s
}

func compareGolden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(file, []byte(got), 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}
