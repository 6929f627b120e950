package attack_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestForeignNodeClaimingSealedIsNotTrusted checks
// mutex/doc.go: "No write into the holder's node lets anyone else in. ...
// a waiter trusts a data change as its predecessor's release only on a node
// that was sealed when it read it ... A foreign client's node (Curator,
// kazoo, go-zookeeper) whose data changes is read again, never taken as
// released" (rwlock/doc.go and semaphoremutex/doc.go say the same: "a
// waiter trusts a data change as a writer's release only on a node that
// was sealed when it read it (see package mutex)"), and mutual exclusion
// "among all processes using the lock path".
//
// A raw go-zookeeper client queues a contender node of the recipe's shape
// (mutex: "_c_<uuid>-lock-", rwlock: "<host>-W-", semaphore: its internal
// lock node) whose data copies ours, "sealed":true included (and the
// semaphore's "sole-lease" tag). It holds the lock. Our waiter queues behind
// it; then the node's data is changed and the node kept. The waiter must
// not enter. Variants:
//   - world-acl: the node's ACL is the world's (anyone may write it: it
//     was not sealed when the waiter read it), and a second raw client, not
//     the node's owner, writes it;
//   - second-writer: the node's ACL has the sealed shape (the world without
//     WRITE and ADMIN, the raw client's own digest identity with ALL) plus a
//     second digest identity with WRITE, and a client authenticated as that
//     second identity writes it;
//
// Not a variant: the sealed shape alone, written by its owner. A client
// that impersonates a session of ours this way (its own digest identity,
// our ACL's shape, our data) is what the waiter cannot tell from one of
// ours without a read after the change; internal/queue's await and
// docs/safety.md say so, and name the defence (the lock path's ACL);
//   - no-field (control): sealed-shaped ACL, our data without "sealed".
//
// Found by an outside user's attack test (all of world-acl and sealed-acl
// failed: the waiter entered 30-60 ms after the write, the node still
// there); the waiter now also reads its predecessor's ACL.
func TestForeignNodeClaimingSealedIsNotTrusted(t *testing.T) {
	c := zktest.New(t)
	s := session(t, c.Servers())
	type recipe struct {
		name   string
		parent string // below the lock path
		node   func(id string) string
		data   func(id string, sealed bool) string
		wait   func(ctx context.Context, path string, got chan<- error, rel <-chan struct{})
	}
	plain := func(id string, sealed bool) string {
		if sealed {
			return fmt.Sprintf(`{"id":%q,"host":"vm","pid":1,"sealed":true}`, id)
		}
		return fmt.Sprintf(`{"id":%q,"host":"vm","pid":1}`, id)
	}
	recipes := []recipe{
		{"mutex", "", func(id string) string { return "_c_" + id + "-lock-" }, plain,
			func(ctx context.Context, path string, got chan<- error, rel <-chan struct{}) {
				m, _ := mutex.New(s, path)
				_, err := m.Acquire(ctx)
				got <- err
				if err == nil {
					<-rel
					_ = m.Release(context.WithoutCancel(ctx))
				}
			}},
		{"rwlock-reader", "", func(string) string { return "evil-W-" }, plain,
			func(ctx context.Context, path string, got chan<- error, rel <-chan struct{}) {
				rw, _ := rwlock.New(s, path)
				_, err := rw.ReadLock().Acquire(ctx)
				got <- err
				if err == nil {
					<-rel
					_ = rw.ReadLock().Release(context.WithoutCancel(ctx))
				}
			}},
		{"rwlock-writer", "", func(string) string { return "evil-W-" }, plain,
			func(ctx context.Context, path string, got chan<- error, rel <-chan struct{}) {
				rw, _ := rwlock.New(s, path)
				_, err := rw.WriteLock().Acquire(ctx)
				got <- err
				if err == nil {
					<-rel
					_ = rw.WriteLock().Release(context.WithoutCancel(ctx))
				}
			}},
		{"semaphoremutex", "/locks", func(id string) string { return "_c_" + id + "-lock-" },
			func(id string, sealed bool) string {
				if sealed {
					return fmt.Sprintf(`{"id":%q,"host":"vm","pid":1,"tag":"sole-lease","sealed":true}`, id)
				}
				return fmt.Sprintf(`{"id":%q,"host":"vm","pid":1,"tag":"sole-lease"}`, id)
			},
			func(ctx context.Context, path string, got chan<- error, rel <-chan struct{}) {
				m, _ := semaphoremutex.New(s, path)
				_, err := m.Acquire(ctx)
				got <- err
				if err == nil {
					<-rel
					_ = m.Release(context.WithoutCancel(ctx))
				}
			}},
	}
	variants := []struct {
		name                          string
		sealedACL, second, sealedData bool
	}{
		{"world-acl", false, false, true},
		{"second-writer", true, true, true},
		{"no-field", true, false, false},
	}
	for _, r := range recipes {
		for _, v := range variants {
			t.Run(r.name+"/"+v.name, func(t *testing.T) {
				ctx := ctxT(t, 20*time.Second)
				owner := raw(t, c)
				writer := raw(t, c) // someone else, for the world-acl variant
				path := c.Root() + "/forged-" + r.name + "-" + v.name
				for _, p := range []string{c.Root(), path, path + r.parent} {
					if _, err := owner.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
						t.Fatal(err)
					}
				}
				acl := zk.WorldACL(zk.PermAll)
				if v.sealedACL {
					if err := owner.AddAuth("digest", []byte("evil:pw")); err != nil {
						t.Fatal(err)
					}
					acl = append(zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermDelete), zk.DigestACL(zk.PermAll, "evil", "pw")...)
					writer = owner
				}
				if v.second {
					acl = append(acl, zk.DigestACL(zk.PermWrite, "other", "pw")...)
					writer = raw(t, c)
					if err := writer.AddAuth("digest", []byte("other:pw")); err != nil {
						t.Fatal(err)
					}
				}
				id := "0b5e55ed-0000-4000-8000-000000000001"
				data := r.data(id, v.sealedData)
				node, err := owner.Create(path+r.parent+"/"+r.node(id), []byte(data), zk.FlagEphemeral|zk.FlagSequence, acl)
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan error, 1)
				rel := make(chan struct{})
				done := make(chan struct{})
				go func() { defer close(done); r.wait(ctx, path, got, rel) }()
				defer func() { close(rel); <-done }()
				waitFor(t, 10*time.Second, "our waiter's watch on the foreign holder's node", func() bool {
					return watched(c, 0, node)
				})
				if _, err := writer.Set(node, []byte(data), -1); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-got:
					ok, _, _ := owner.Exists(node)
					t.Errorf("our waiter entered (err=%v) while the foreign holder's node %s exists=%v: two holders", err, node, ok)
					return
				case <-time.After(1500 * time.Millisecond):
				}
				if err := owner.Delete(node, -1); err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatalf("our waiter after the foreign holder left: %v", err)
				}
			})
		}
	}
}
