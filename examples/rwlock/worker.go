package main

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// sessionTimeout of each worker's session.
const sessionTimeout = 4 * time.Second

// worker is one contender with its own session, read/write lock handle and goroutine.
type worker = demo.Worker[*rwlock.RWLock]

func newWorker(ctx context.Context, name string, servers []string, lockPath string) (*worker, error) {
	return demo.NewWorker(ctx, name, servers, sessionTimeout, func(s *conn.Session) (*rwlock.RWLock, error) {
		return rwlock.New(s, lockPath)
	})
}
