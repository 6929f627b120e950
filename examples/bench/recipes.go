package main

import (
	"context"
	"sort"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// locker is what every recipe's lock offers.
type locker interface {
	Acquire(ctx context.Context) (*conn.Lease, error)
	Release(ctx context.Context) error
}

type recipe struct {
	make   func(s *conn.Session, path string, leases int) (locker, error)
	shared bool // holders may overlap (read locks): no violation check
}

var recipes = map[string]recipe{
	"mutex": {make: func(s *conn.Session, path string, _ int) (locker, error) { return mutex.New(s, path) }},
	"exclusive": {make: func(s *conn.Session, path string, _ int) (locker, error) {
		return exclusive.New(s, path)
	}},
}

func recipeNames() []string {
	var names []string
	for n := range recipes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
