package attack_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_MutexCountsForeignContenders checks mutex/doc.go: "Mutual
// exclusion among all processes using the lock path (Curator's
// InterProcessMutex, and the lock nodes of kazoo and go-zookeeper, count as
// contenders)": a raw client queues a node of each shape (ephemeral
// sequential, created first, so it holds): Curator / go-zookeeper
// "_c_<uuid>-lock-", kazoo's Lock "<uuid>__lock__". Our mutex must wait
// until the node goes, then enter. (A kazoo ReadLock node, "__rlock__", is
// ignored, as kazoo's own Lock ignores it; kazoo's WriteLock does not.)
func TestProbe_MutexCountsForeignContenders(t *testing.T) {
	foreignContenders(t, map[string]string{
		"curator-gozk": "_c_6f1d2a3b-0000-4000-8000-00000000000a-lock-",
		"kazoo-lock":   "6f1d2a3b00004000800000000000000a__lock__",
	})
}

func foreignContenders(t *testing.T, shapes map[string]string) {
	c := zktest.New(t)
	s := session(t, c.Servers())
	zc := raw(t, c)
	for name, child := range shapes {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 15*time.Second)
			path := c.Root() + "/foreign-" + name
			for _, p := range []string{c.Root(), path} {
				if _, err := zc.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
					t.Fatal(err)
				}
			}
			node, err := zc.Create(path+"/"+child, []byte("127.0.0.1"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := mutex.New(s, path)
			if _, ok, err := m.TryAcquire(ctx); ok || err != nil {
				if ok {
					_ = m.Release(ctx)
				}
				t.Fatalf("TryAcquire while a foreign %s node %s holds: ok=%v err=%v", name, node, ok, err)
			}
			got := make(chan error, 1)
			go func() {
				_, err := m.Acquire(ctx)
				got <- err
				if err == nil {
					_ = m.Release(context.WithoutCancel(ctx))
				}
			}()
			select {
			case err := <-got:
				t.Fatalf("Acquire returned (%v) while the foreign node holds", err)
			case <-time.After(500 * time.Millisecond):
			}
			if err := zc.Delete(node, -1); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("not granted 5 s after the foreign node went")
			}
		})
	}
}
