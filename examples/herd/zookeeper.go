package main

import (
	"context"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// tickTime of the ZooKeeper this command starts. The server grants sessions
// of up to 20 ticks; long sessions ping rarely (every third of the
// timeout), so pings hardly weigh in the packet counts.
const tickTime = 2 * time.Second

// zookeeper returns the servers to use: the given ones, else ZK_SERVERS,
// else a ZooKeeper started here (stopped by the returned func). Its first
// line to stderr says which.
func zookeeper(ctx context.Context, servers []string) ([]string, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return demo.Start(ctx, servers, os.Stderr, zktest.WithTickTime(tickTime))
}
