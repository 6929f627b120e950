package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// tickTime of the ZooKeeper this command starts. The server grants sessions
// of up to 20 ticks; long sessions ping rarely (every third of the
// timeout), so pings hardly weigh in the packet counts.
const tickTime = 2 * time.Second

// zookeeper returns the servers to use: the given ones, else ZK_SERVERS,
// else a ZooKeeper started here (stopped by the returned func).
func zookeeper(ctx context.Context, servers []string) ([]string, func(), error) {
	if servers != nil {
		return servers, func() {}, nil
	}
	if os.Getenv("ZK_SERVERS") == "" {
		fmt.Fprintln(os.Stderr, "starting ZooKeeper (pass -servers or set ZK_SERVERS to use your own)...")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := zktest.Start(ctx, zktest.WithTickTime(tickTime))
	if err != nil {
		return nil, nil, err
	}
	return c.Servers(), func() { c.Stop() }, nil
}
