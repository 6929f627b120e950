package attack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
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
	f := newFixture(t)
	s := f.Session()
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
				f := f.In(t)
				ctx := ctxT(t, 20*time.Second)
				owner := f.Raw()
				writer := f.Raw() // someone else, for the world-acl variant
				path := f.Path("forged-") + r.name + "-" + v.name
				ensure(t, owner, zk.WorldACL(zk.PermAll), f.Root(), path, path+r.parent)
				acl := zk.WorldACL(zk.PermAll)
				if v.sealedACL {
					require.NoError(t, owner.AddAuth("digest", []byte("evil:pw")))
					acl = append(zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermDelete), zk.DigestACL(zk.PermAll, "evil", "pw")...)
					writer = owner
				}
				if v.second {
					acl = append(acl, zk.DigestACL(zk.PermWrite, "other", "pw")...)
					writer = f.Raw()
					require.NoError(t, writer.AddAuth("digest", []byte("other:pw")))
				}
				id := "0b5e55ed-0000-4000-8000-000000000001"
				data := r.data(id, v.sealedData)
				node, err := owner.Create(path+r.parent+"/"+r.node(id), []byte(data), zk.FlagEphemeral|zk.FlagSequence, acl)
				require.NoError(t, err)
				got := make(chan error, 1)
				rel := make(chan struct{})
				done := make(chan struct{})
				go func() { defer close(done); r.wait(ctx, path, got, rel) }()
				defer func() { close(rel); <-done }()
				waitFor(t, 10*time.Second, "our waiter's watch on the foreign holder's node", func() bool {
					return watched(f, 0, node)
				})
				_, err = writer.Set(node, []byte(data), -1)
				require.NoError(t, err)
				select {
				case err := <-got:
					ok, _, _ := owner.Exists(node)
					t.Errorf("our waiter entered (err=%v) while the foreign holder's node %s exists=%v: two holders", err, node, ok)
					return
				case <-time.After(1500 * time.Millisecond):
				}
				require.NoError(t, owner.Delete(node, -1))
				require.NoError(t, <-got, "our waiter after the foreign holder left")
			})
		}
	}
}

// TestMutexCountsForeignContenders checks mutex/doc.go: "Mutual
// exclusion among all processes using the lock path (Curator's
// InterProcessMutex, and the lock nodes of kazoo and go-zookeeper, count as
// contenders)": a raw client queues a node of each shape (ephemeral
// sequential, created first, so it holds): Curator / go-zookeeper
// "_c_<uuid>-lock-", kazoo's Lock "<uuid>__lock__". Our mutex must wait
// until the node goes, then enter. (A kazoo ReadLock node, "__rlock__", is
// ignored, as kazoo's own Lock ignores it; kazoo's WriteLock does not.)
func TestMutexCountsForeignContenders(t *testing.T) {
	foreignContenders(t, map[string]string{
		"curator-gozk": "_c_6f1d2a3b-0000-4000-8000-00000000000a-lock-",
		"kazoo-lock":   "6f1d2a3b00004000800000000000000a__lock__",
	})
}

func foreignContenders(t *testing.T, shapes map[string]string) {
	f := newFixture(t)
	s := f.Session()
	zc := f.Raw()
	for name, child := range shapes {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 15*time.Second)
			path := f.Path("foreign-") + name
			ensure(t, zc, zk.WorldACL(zk.PermAll), f.Root(), path)
			node, err := zc.Create(path+"/"+child, []byte("127.0.0.1"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
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
			require.NoError(t, zc.Delete(node, -1))
			select {
			case err := <-got:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("not granted 5 s after the foreign node went")
			}
		})
	}
}

// TestMutexRevocableNodeForgedSealKeepsWaiterOut (passes) checks, with a
// revocable holder, mutex/doc.go: "No write into the holder's node lets
// anyone else in. ... a waiter trusts a data change as its predecessor's
// release only on a node that was sealed when it read it", and, for
// WithRevocable, "the holder keeps the mutex until it releases it" (and
// Revoke's "Nobody else gets the mutex until the holder releases it").
//
// A revocable node carries the world's ACL, so a bystander may write it.
// It first writes the sealed nodes' data (their "sealed":true tag) into the
// holder's node, then, once the waiter behind has read it and watches it,
// writes once more. The holder has not released.
func TestMutexRevocableNodeForgedSealKeepsWaiterOut(t *testing.T) {
	f := newFixture(t)
	ctx := ctxT(t, 25*time.Second)
	sa := f.Session()
	sb := f.Session()
	zc := f.Raw()
	path := f.Path("forged-seal")

	ma, err := mutex.New(sa, path, lock.WithRevocable())
	require.NoError(t, err)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	defer ma.Release(context.WithoutCancel(ctx))

	// The bystander makes the revocable node look sealed.
	data, st, err := zc.Get(la.Path())
	require.NoError(t, err)
	forged := strings.TrimSuffix(string(data), "}") + `,"sealed":true}`
	_, err = zc.Set(la.Path(), []byte(forged), st.Version)
	require.NoError(t, err, "bystander's first write (allowed on a revocable node)")
	// ... and gives it a sealed node's ACL, with its own identity in the
	// place of the holder's.
	require.NoError(t, zc.AddAuth("digest", []byte("evil:pw")))
	sealedACL := append(zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermDelete), zk.DigestACL(zk.PermAll, "evil", "pw")...)
	_, err = zc.SetACL(la.Path(), sealedACL, -1)
	require.NoError(t, err, "bystander's setACL (allowed on a revocable node)")

	mb, err := mutex.New(sb, path)
	require.NoError(t, err)
	type res struct {
		l   *conn.Lease
		err error
	}
	got := make(chan res, 1)
	go func() {
		l, err := mb.Acquire(ctx)
		got <- res{l, err}
		if err == nil {
			_ = mb.Release(context.WithoutCancel(ctx))
		}
	}()
	waitFor(t, 10*time.Second, "the waiter's watch on the holder's node", func() bool {
		return watched(f, 0, la.Path())
	})
	_, err = zc.Set(la.Path(), []byte(forged), -1)
	require.NoError(t, err, "bystander's second write")

	select {
	case r := <-got:
		if r.err == nil {
			_, werr := r.l.GuardedWrite(ctx, &zk.CreateRequest{Path: f.Path("b-was-here"), Acl: zk.WorldACL(zk.PermAll)})
			t.Fatalf("two holders: B acquired %s while A (%s) still holds and never released; B's guarded write: %v; A's lease err: %v",
				r.l.Path(), la.Path(), werr, la.Err())
		}
		t.Fatalf("B's acquire failed: %v", r.err)
	case <-time.After(3 * time.Second):
		// B still waits: the promise held.
	}
	require.NoError(t, ma.Release(ctx))
	r := <-got
	if r.err != nil {
		t.Fatalf("B after A's release: %v", r.err)
	}
}

// oddNames are children a bystander creates under a lock path: none is a
// lock node of any client library (no sequence number to parse).
var oddNames = []string{"y", "lock-", "_c_x-lock-", "_c_x-lock-abc", "h-W-", "h-R-xyz", "-latch-", "leases0", "locks0", "_c_-lease-zz"}

// TestOddChildrenUnderLockPathsAreIgnored checks that a bystander's
// children that are no lock node (names without a sequence number) neither
// block nor break a handoff between two sessions, for every recipe; and
// that Participants (mutex/doc.go's Participant: "a node that counts in the
// lock's queue") does not fail on them. The docs do not say how such
// children are treated (README: "Nothing is left behind", rwlock/doc.go:
// "Names are parsed from the right"); this pins that they are ignored.
func TestOddChildrenUnderLockPathsAreIgnored(t *testing.T) {
	f := newFixture(t)
	sa := f.Session()
	sb := f.Session()
	zc := f.Raw()
	type side struct {
		acq func(ctx context.Context) error
		rel func(ctx context.Context) error
	}
	cases := []struct {
		name string
		dirs []string // where the bystander puts odd children, below path
		mk   func(s *zk.Conn, path string) (a, b side)
	}{
		{"mutex", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			ma, _ := mutex.New(sa, path)
			mb, _ := mutex.New(sb, path)
			return side{func(ctx context.Context) error {
					_, err := ma.Acquire(ctx)
					if err == nil {
						_, err = ma.Participants(ctx)
					}
					return err
				}, ma.Release},
				side{func(ctx context.Context) error { _, err := mb.Acquire(ctx); return err }, mb.Release}
		}},
		{"rwlock", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			ra, _ := rwlock.New(sa, path)
			rb, _ := rwlock.New(sb, path)
			return side{func(ctx context.Context) error { _, err := ra.WriteLock().Acquire(ctx); return err }, ra.WriteLock().Release},
				side{func(ctx context.Context) error { _, err := rb.ReadLock().Acquire(ctx); return err }, rb.ReadLock().Release}
		}},
		{"semaphoremutex", []string{"", "/locks", "/leases"}, func(_ *zk.Conn, path string) (side, side) {
			ma, _ := semaphoremutex.New(sa, path)
			mb, _ := semaphoremutex.New(sb, path)
			return side{func(ctx context.Context) error {
					_, err := ma.Acquire(ctx)
					if err == nil {
						_, err = ma.Participants(ctx)
					}
					return err
				}, ma.Release},
				side{func(ctx context.Context) error { _, err := mb.Acquire(ctx); return err }, mb.Release}
		}},
		{"semaphore-1", []string{"", "/locks", "/leases"}, func(_ *zk.Conn, path string) (side, side) {
			sema, _ := semaphoremutex.NewSemaphore(sa, path, 1)
			semb, _ := semaphoremutex.NewSemaphore(sb, path, 1)
			var ga, gb = make(chan func(context.Context) error, 1), make(chan func(context.Context) error, 1)
			return side{func(ctx context.Context) error {
					l, err := sema.Acquire(ctx)
					if err == nil {
						ga <- func(ctx context.Context) error { return sema.ReturnLease(ctx, l) }
					}
					return err
				}, func(ctx context.Context) error { return (<-ga)(ctx) }},
				side{func(ctx context.Context) error {
					l, err := semb.Acquire(ctx)
					if err == nil {
						gb <- func(ctx context.Context) error { return semb.ReturnLease(ctx, l) }
					}
					return err
				}, func(ctx context.Context) error { return (<-gb)(ctx) }}
		}},
		{"exclusive", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			xa, _ := exclusive.New(sa, path)
			xb, _ := exclusive.New(sb, path)
			return side{func(ctx context.Context) error { _, err := xa.Acquire(ctx); return err }, xa.Release},
				side{func(ctx context.Context) error { _, err := xb.Acquire(ctx); return err }, xb.Release}
		}},
		{"leader", []string{""}, func(_ *zk.Conn, path string) (side, side) {
			ea, _ := leader.New(sa, path, "a")
			eb, _ := leader.New(sb, path, "b")
			return side{func(ctx context.Context) error {
					_, err := ea.Campaign(ctx)
					if err == nil {
						_, err = ea.Participants(ctx)
					}
					if err == nil {
						_, err = ea.Leader(ctx)
					}
					return err
				}, ea.Resign},
				side{func(ctx context.Context) error { _, err := eb.Campaign(ctx); return err }, eb.Resign}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			path := f.Path("odd-") + tc.name
			for _, d := range tc.dirs {
				dir := path + d
				for _, p := range []string{f.Root(), path, dir} {
					_, _ = zc.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
				}
				for _, n := range oddNames {
					if _, err := zc.Create(dir+"/"+n, []byte("odd"), 0, zk.WorldACL(zk.PermAll)); err != nil {
						t.Fatalf("bystander create %s/%s: %v", dir, n, err)
					}
				}
			}
			a, b := tc.mk(zc, path)
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			require.NoError(t, a.acq(actx), "A's acquire among odd children")
			bGot, bRel, bRelErr := make(chan error, 1), make(chan struct{}), make(chan error, 1)
			go func() { // B acquires and releases on one goroutine (mutex, rwlock)
				err := b.acq(actx)
				bGot <- err
				if err == nil {
					<-bRel
					bRelErr <- b.rel(ctx)
				}
			}()
			select {
			case err := <-bGot:
				t.Fatalf("B got in (or failed) while A holds: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			require.NoError(t, a.rel(ctx), "A's release")
			require.NoError(t, <-bGot, "B's acquire after A's release")
			close(bRel)
			require.NoError(t, <-bRelErr, "B's release")
		})
	}
}
