package demo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/zkrecipes/zkrecipes/zktest"
	"github.com/zkrecipes/zkrecipes/zktest/docker"
)

// RunFunc tells an example's story against servers, writing it to out; an
// error means an invariant was violated or ZooKeeper failed.
type RunFunc func(ctx context.Context, servers []string, out io.Writer) error

// Environment is the help on the environment variables every example reads
// (through package zktest), printed by -h after the flags.
const Environment = `environment:
  ZK_SERVERS=host:port,...  use this ZooKeeper instead of starting one
  ZK_BACKEND=NAME           start it with docker, local or external (ZK_SERVERS) only;
                            default: the first available of ZK_SERVERS, a docker image
                            present locally, a local install, a docker image pulled
  ZK_IMAGE=NAME             docker image (default ` + zktest.DefaultImage + `; without a registry
                            build zkrecipes/zookeeper:3.8-debian with scripts/zk-image.sh)
  ZK_PULL=never             do not pull a missing docker image
  ZOOKEEPER_HOME=DIR        local backend: an unpacked Apache ZooKeeper release
                            (default: Debian's zookeeper package); needs java
  ZK_VERBOSE=true           testcontainers-go's log (the docker backend), on stderr (as -v)
  TESTCONTAINERS_RYUK_DISABLED=true
                            docker backend without a registry: no Ryuk (its image
                            cannot be pulled); the next run removes what a killed one left
`

// Flags returns the flag set of the example name: ExitOnError, -v
// (testcontainers-go's log), and a usage that prints "usage: go run
// ./examples/NAME [flags]", what, the flags and Environment to stderr.
func Flags(name, what string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	fs.BoolFunc("v", "verbose: testcontainers-go's log (docker backend), on stderr (sets ZK_VERBOSE=true)", func(string) error {
		return os.Setenv("ZK_VERBOSE", "true")
	})
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: go run ./examples/%s [flags]\n\n%s\n\nflags:\n", name, what)
		fs.PrintDefaults()
		fmt.Fprintln(w)
		fmt.Fprint(w, Environment)
	}
	return fs
}

// Start returns the servers to use and how to let them go: servers if not
// nil (a -servers flag), else ZK_SERVERS, else a ZooKeeper it starts with
// zktest (opts apply to that one), its docker backend run by the
// testcontainers-go driver. Its first line to log says which.
func Start(ctx context.Context, servers []string, log io.Writer, opts ...zktest.Option) ([]string, func(), error) {
	if servers != nil {
		fmt.Fprintf(log, "ZooKeeper: external -servers %s\n", strings.Join(servers, ","))
		return servers, func() {}, nil
	}
	if v, _ := strconv.ParseBool(os.Getenv("ZK_VERBOSE")); !v {
		// testcontainers-go's banner on connecting goes to its default logger.
		tclog.SetDefault(tclog.NewNoopLogger())
	}
	opts = append([]zktest.Option{zktest.WithDriver(docker.Driver())}, opts...)
	c, err := zktest.Start(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	if c.Backend() == zktest.BackendExternal {
		fmt.Fprintf(log, "ZooKeeper: %s\n", c.Source())
	} else {
		fmt.Fprintf(log, "ZooKeeper: %s, started for this run at %s (set ZK_SERVERS to use yours; -h for more)\n",
			c.Source(), strings.Join(c.Servers(), ","))
	}
	return c.Servers(), func() { c.Stop() }, nil
}

// Main is the main of the examples without flags of their own: -h prints
// the usage (what the example shows, -v, Environment); otherwise it runs
// run on stdout within 2 minutes, against ZooKeeper (its first line, on
// stderr, says which), and exits with status 1, the error printed to
// stderr after the command's name, if either fails.
func Main(name, what string, run RunFunc) {
	fs := Flags(name, what)
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits 0 on -h, 2 on a bad flag
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected arguments %q\n", name, fs.Args())
		fs.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	servers, stop, err := Start(ctx, nil, os.Stderr)
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
