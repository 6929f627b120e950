package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestProbe_SharedWatchSurvivesOneWaiterGivingUp checks conn/doc.go: "A
// watch nobody waits on any more is removed from the server ... when no
// other watcher of the session waits on that path and kind", from the other
// side: when one waiter of a session gives up, another waiter of the same
// session on the same node must still be woken.
//   - rwlock: two readers of one session (two handles) queued behind one
//     writer both watch its W node; one times out; the writer releases; the
//     other must get the read lock.
//   - semaphore: two Semaphore handles (N=2) of one session wait: the first
//     holds the internal mutex and watches the lease nodes; it times out;
//     a lease is released; the second must get a lease.
//   - leader: two Observe calls on one session; one is cancelled; the other
//     must still see the leader change.
func TestProbe_SharedWatchSurvivesOneWaiterGivingUp(t *testing.T) {
	c := zktest.New(t)
	sh := session(t, c.Servers())
	sw := session(t, c.Servers())
	t.Run("rwlock", func(t *testing.T) {
		ctx := ctxT(t, 20*time.Second)
		path := c.Root() + "/shared-rw"
		h, _ := rwlock.New(sh, path)
		if _, err := h.WriteLock().Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		r1, _ := rwlock.New(sw, path)
		r2, _ := rwlock.New(sw, path)
		got2 := make(chan error, 1)
		go func() {
			_, err := r2.ReadLock().Acquire(ctx)
			got2 <- err
			if err == nil {
				_ = r2.ReadLock().Release(context.WithoutCancel(ctx))
			}
		}()
		zc := raw(t, c)
		waitFor(t, 5*time.Second, "r2 queued", func() bool { return len(children(zc, path)) == 2 })
		c1, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := r1.ReadLock().Acquire(c1)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("r1: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // give a wrong watch removal time to reach the server
		if err := h.WriteLock().Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got2:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("r2 not woken 5 s after the writer released: its watch went with r1's")
		}
	})
	t.Run("semaphore", func(t *testing.T) {
		ctx := ctxT(t, 20*time.Second)
		path := c.Root() + "/shared-sem"
		h, _ := semaphoremutex.NewSemaphore(sh, path, 2)
		l1, err := h.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w1, _ := semaphoremutex.NewSemaphore(sw, path, 2)
		w2, _ := semaphoremutex.NewSemaphore(sw, path, 2)
		c1, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		got1 := make(chan error, 1)
		go func() { _, err := w1.Acquire(c1); got1 <- err }()
		zc := raw(t, c)
		waitFor(t, 5*time.Second, "w1 queued", func() bool { return len(children(zc, path+"/locks")) == 1 })
		got2 := make(chan error, 1)
		go func() { _, err := w2.Acquire(ctx); got2 <- err }()
		waitFor(t, 5*time.Second, "w2 queued", func() bool { return len(children(zc, path+"/locks")) == 2 })
		if err := <-got1; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("w1: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		if err := h.ReturnLease(ctx, l1); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got2:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("w2 got no lease 5 s after one was released")
		}
	})
	t.Run("leader-observe", func(t *testing.T) {
		ctx := ctxT(t, 20*time.Second)
		path := c.Root() + "/shared-observe"
		o1, _ := leader.New(sw, path, "o1")
		o2, _ := leader.New(sw, path, "o2")
		c1, cancel1 := context.WithCancel(ctx)
		ch1 := o1.Observe(c1)
		ch2 := o2.Observe(ctx)
		<-ch1
		<-ch2
		cancel1()
		for range ch1 {
		}
		time.Sleep(300 * time.Millisecond)
		e, _ := leader.New(sh, path, "boss")
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Resign(context.WithoutCancel(ctx))
		deadline := time.After(5 * time.Second)
		for {
			select {
			case p := <-ch2:
				if p.Node == l.Path() {
					return
				}
			case <-deadline:
				t.Fatal("the remaining Observe did not see the new leader within 5 s")
			}
		}
	})
}
