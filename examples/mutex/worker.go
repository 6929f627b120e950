package main

import (
	"context"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// sessionTimeout of each worker's session.
const sessionTimeout = 4 * time.Second

// worker is one contender with its own session, mutex handle and goroutine.
type worker = demo.Worker[*mutex.InterProcessMutex]

func newWorker(ctx context.Context, name string, servers []string, lockPath string) (*worker, error) {
	return demo.NewWorker(ctx, name, servers, sessionTimeout, func(s *conn.Session) (*mutex.InterProcessMutex, error) {
		return mutex.New(s, lockPath)
	})
}

func readInt(ctx context.Context, s *conn.Session, path string) (int, error) {
	v, err := demo.Read(ctx, s, path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}
