package multilock_test

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/multilock"
)

// printLock is a stand-in Locker that prints what it is asked to do; in a
// program the locks come from this module's recipes (exclusive.New,
// mutex.New, ...).
type printLock string

func (p printLock) Path() string           { return string(p) }
func (p printLock) Session() *conn.Session { return nil } // a stand-in: identified by Path alone
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
func Example() {
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
