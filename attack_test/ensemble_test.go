package attack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// serverOf returns the index of the server that lists session sid in cons.
func serverOf(c *zktest.Cluster, sid int64) int {
	for i := range c.Servers() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		out, err := c.FourLetter(ctx, i, "cons")
		cancel()
		if err == nil && strings.Contains(out, fmt.Sprintf("sid=0x%x", sid)) {
			return i
		}
	}
	return -1
}

// TestProbe_EnsembleHolderSurvivesItsServerKilled checks conn/doc.go's
// "Suspended (connection broke; the session may live), Reconnected (same
// session back)" and mutex/doc.go's "Mutual exclusion ... as long as each
// holder's session lives", on a three-server ensemble: the server the
// holder is connected to is killed (SIGKILL); the holder's session moves to
// another server and keeps its lock (lease not lost, guarded writes
// commit), the waiter (on another server) keeps waiting, and gets the lock
// once the holder releases; the killed server restarts and agrees.
func TestProbe_EnsembleHolderSurvivesItsServerKilled(t *testing.T) {
	c := zktest.New(t, zktest.WithServers(3))
	ctx := ctxT(t, 28*time.Second)
	sa := session(t, c.Servers(), conn.WithSessionTimeout(6*time.Second))
	path := c.Root() + "/ens-kill"
	ma, _ := mutex.New(sa, path)
	la, err := ma.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid := la.Epoch().SessionID()
	srv := -1
	waitFor(t, 5*time.Second, "the holder's server", func() bool { srv = serverOf(c, sid); return srv >= 0 })
	var others []string
	for i, a := range c.Servers() {
		if i != srv {
			others = append(others, a)
		}
	}
	sb := session(t, others)
	mb, _ := mutex.New(sb, path)
	bGot := make(chan error, 1)
	bRel := make(chan struct{})
	go func() {
		_, err := mb.Acquire(ctx)
		bGot <- err
		if err == nil {
			<-bRel
			_ = mb.Release(context.WithoutCancel(ctx))
		}
	}()
	defer close(bRel)
	zc := raw(t, c)
	waitFor(t, 5*time.Second, "the waiter's node", func() bool { return len(children(zc, path)) == 2 })
	if err := c.Kill(srv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the holder to reconnect", func() bool { return sa.State() == conn.Reconnected })
	if la.Err() != nil {
		t.Fatalf("holder's lease lost across its server's death: %v", la.Err())
	}
	if _, err := la.GuardedWrite(ctx, &zk.CreateRequest{Path: path + "-res", Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatalf("guarded write after the failover: %v", err)
	}
	select {
	case err := <-bGot:
		t.Fatalf("waiter entered (err=%v) while the holder's session lives", err)
	default:
	}
	if err := ma.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-bGot:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not granted 10 s after the release")
	}
	if err := c.Restart(srv); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
}
