package multilock_test

import (
	"context"
	"fmt"
	"log"
	"path"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// servers are the addresses of the ZooKeeper the examples run against
// (TestMain starts one); in a program, your ensemble's.
func servers() []string { return testzk.Servers() }

// Two accounts' locks taken as one: all or nothing, within one deadline.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := conn.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	bob, err := mutex.New(sess, "/example-accounts/bob")
	if err != nil {
		log.Fatal(err)
	}
	alice, err := mutex.New(sess, "/example-accounts/alice")
	if err != nil {
		log.Fatal(err)
	}
	m, err := multilock.New(bob, alice)
	if err != nil {
		log.Fatal(err)
	}
	leases, err := m.Acquire(ctx) // ctx's deadline bounds the whole acquisition
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := m.Release(context.WithoutCancel(ctx)); err != nil {
			log.Print(err)
		}
	}()
	select {
	case <-m.Lost(): // any of them lost: stop the transfer
		log.Print("lost a lock")
	default:
		var locks []string // the leases come in path order; a mutex's node is under its path
		for _, l := range leases {
			locks = append(locks, path.Dir(l.Path()))
		}
		fmt.Println("holding", len(leases), "locks:", locks)
	}
	// Output: holding 2 locks: [/example-accounts/alice /example-accounts/bob]
}

// printLock is a stand-in Locker that prints what it is asked to do; in a
// program the locks come from this module's recipes (exclusive.New,
// mutex.New, ...).
type printLock string

func (p printLock) Path() string { return string(p) } // a stand-in: identified by Path alone
func (p printLock) Acquire(context.Context) (*conn.Lease, error) {
	fmt.Println("acquire", p)
	return nil, nil
}
func (p printLock) Release(context.Context) error {
	fmt.Println("release", p)
	return nil
}

// Locks are taken in path order whatever the order given, and released in
// reverse, so that two MultiLocks over the same locks cannot deadlock.
func Example_order() {
	ctx := context.Background()
	m, err := multilock.New(printLock("/accounts/bob"), printLock("/accounts/alice"))
	if err != nil {
		panic(err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		panic(err)
	}
	// ... work on both accounts, watching m.Lost() ...
	if err := m.Release(ctx); err != nil {
		panic(err)
	}
	// Output:
	// acquire /accounts/alice
	// acquire /accounts/bob
	// release /accounts/bob
	// release /accounts/alice
}
