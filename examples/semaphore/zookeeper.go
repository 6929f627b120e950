package main

import (
	"context"
	"fmt"
	"os"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// zookeeper returns the servers in ZK_SERVERS, or starts a ZooKeeper and
// returns its servers and how to stop it.
func zookeeper(ctx context.Context) ([]string, func(), error) {
	if os.Getenv("ZK_SERVERS") == "" {
		fmt.Fprintln(os.Stderr, "starting ZooKeeper (set ZK_SERVERS to use your own)...")
	}
	c, err := zktest.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.Servers(), func() { c.Stop() }, nil
}
