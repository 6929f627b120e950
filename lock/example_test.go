package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// withLock runs f while l is held: any lock of the module will do.
func withLock(ctx context.Context, l lock.Locker, f func(*conn.Lease) error) (err error) {
	lease, err := l.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, l.Release(context.WithoutCancel(ctx))) }()
	return f(lease)
}

// Every lock is a Locker, with the same Acquire and Release contract.
func ExampleLocker() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	m, err := mutex.New(sess, "/example-locks/a")
	if err != nil {
		log.Fatal(err)
	}
	sm, err := semaphoremutex.New(sess, "/example-locks/b")
	if err != nil {
		log.Fatal(err)
	}
	x, err := exclusive.New(sess, "/example-locks/c")
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range []lock.Locker{m, sm, x} {
		err := withLock(ctx, l, func(*conn.Lease) error {
			fmt.Println("holding", l.Path())
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// holding /example-locks/a
	// holding /example-locks/b
	// holding /example-locks/c
}

// Errors are shared: one errors.Is works for every recipe.
func ExampleErrNotHeld() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	m, err := mutex.New(sess, "/example-locks/d")
	if err != nil {
		log.Fatal(err)
	}
	err = m.Release(ctx) // never acquired
	fmt.Println(errors.Is(err, lock.ErrNotHeld))
	fmt.Println(err)
	// Output:
	// true
	// mutex: release /example-locks/d: lock: not held
}
