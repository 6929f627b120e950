package main

import (
	"context"
	"sort"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// locker is what every recipe's lock offers. Each benchmark client has its
// own, on its own session.
type locker interface {
	Acquire(ctx context.Context) (*conn.Lease, error)
	Release(ctx context.Context) error
}

type recipe struct {
	make func(s *conn.Session, path string, leases int) (locker, error)
	// handoff makes a handle with WithLocalHandoff(passes, budget); nil for
	// recipes without it.
	handoff func(s *conn.Session, path string, passes int, budget time.Duration) (locker, error)
	shared  bool // holders may overlap (read locks): no violation check
}

var recipes = map[string]recipe{
	"mutex": {
		make: func(s *conn.Session, path string, _ int) (locker, error) { return mutex.New(s, path) },
		handoff: func(s *conn.Session, path string, passes int, budget time.Duration) (locker, error) {
			return mutex.New(s, path, lock.WithLocalHandoff(passes, budget))
		},
	},
	"semaphoremutex": {
		make: func(s *conn.Session, path string, _ int) (locker, error) { return semaphoremutex.New(s, path) },
		handoff: func(s *conn.Session, path string, passes int, budget time.Duration) (locker, error) {
			return semaphoremutex.New(s, path, lock.WithLocalHandoff(passes, budget))
		},
	},
	"semaphore": {make: func(s *conn.Session, path string, leases int) (locker, error) {
		sem, err := semaphoremutex.NewSemaphore(s, path, leases)
		return &leaseHolder{sem: sem}, err
	}},
	"read": {shared: true, make: func(s *conn.Session, path string, _ int) (locker, error) {
		rw, err := rwlock.New(s, path)
		if err != nil {
			return nil, err
		}
		return rw.ReadLock(), nil
	}},
	"write": {make: func(s *conn.Session, path string, _ int) (locker, error) {
		rw, err := rwlock.New(s, path)
		if err != nil {
			return nil, err
		}
		return rw.WriteLock(), nil
	}},
	"exclusive": {make: func(s *conn.Session, path string, _ int) (locker, error) {
		return exclusive.New(s, path)
	}},
}

// leaseHolder gives a semaphore the locker shape: one lease at a time.
type leaseHolder struct {
	sem   *semaphoremutex.Semaphore
	lease *conn.Lease // the lease held, between Acquire and Release
}

func (h *leaseHolder) Acquire(ctx context.Context) (*conn.Lease, error) {
	l, err := h.sem.Acquire(ctx)
	h.lease = l
	return l, err
}

func (h *leaseHolder) Release(ctx context.Context) error {
	return h.sem.ReturnLease(ctx, h.lease)
}

func recipeNames() []string {
	var names []string
	for n := range recipes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
