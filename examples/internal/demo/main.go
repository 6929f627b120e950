package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// RunFunc tells an example's story against servers, writing it to out; an
// error means an invariant was violated or ZooKeeper failed.
type RunFunc func(ctx context.Context, servers []string, out io.Writer) error

// ZooKeeper returns the servers in ZK_SERVERS, or starts a ZooKeeper and
// returns its servers and how to stop it.
func ZooKeeper(ctx context.Context) ([]string, func(), error) {
	if os.Getenv("ZK_SERVERS") == "" {
		fmt.Fprintln(os.Stderr, "starting ZooKeeper (set ZK_SERVERS to use your own)...")
	}
	c, err := zktest.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c.Servers(), func() { c.Stop() }, nil
}

// Main runs run on stdout within 2 minutes, against ZooKeeper, and exits
// with status 1, the error printed to stderr after the command's name, if
// either fails.
func Main(name string, run RunFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	servers, stop, err := ZooKeeper(ctx)
	if err != nil {
		Fail(name, err)
	}
	err = run(ctx, servers, os.Stdout)
	stop()
	if err != nil {
		Fail(name, err)
	}
}

// Fail prints "name: err" to stderr and exits with status 1.
func Fail(name string, err error) {
	fmt.Fprintln(os.Stderr, name+":", err)
	os.Exit(1)
}
