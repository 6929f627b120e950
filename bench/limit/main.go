// Command limit measures what a ZooKeeper server commits one write after
// another, for the "limit" lines of scripts/bench-peers.sh:
//
//	go run ./bench/limit SERVERS OPS
//
// One session (go-zookeeper's client, connected to one of SERVERS) waits for
// each reply before it sends the next request, first OPS set-data writes on
// one node, then OPS pairs of create (ephemeral sequential, as a lock's
// node) and delete of the node just created. 100 set-data writes before
// the clock starts warm the server up. Stdout gets two lines:
//
//	limit setdata clients=1 ops=N secs=S ops_per_s=X p50_ms=A p99_ms=B
//	limit createdelete clients=1 ops=N secs=S ops_per_s=X p50_ms=A p99_ms=B
//
// For createdelete one op is a create and its delete. Every acquire/release
// cycle of a lock commits at least a create and a delete, so a lock
// benchmark's handoffs_per_s divided by the createdelete ops_per_s is the
// fraction it reaches of what the server commits one pair after another
// (above 1 when the server batches the writes of concurrent clients).
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

const warmup = 100

func main() {
	ops, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if len(os.Args) != 3 || err != nil || ops < 1 {
		fmt.Fprintln(os.Stderr, "usage: limit SERVERS OPS (OPS ≥ 1)")
		os.Exit(2)
	}
	if err := run(strings.Split(os.Args[1], ","), ops); err != nil {
		fmt.Fprintln(os.Stderr, "limit:", err)
		os.Exit(1)
	}
}

// quiet drops go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func run(servers []string, ops int) error {
	c, _, err := zk.Connect(servers, 30*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer c.Close()
	acl := zk.WorldACL(zk.PermAll)
	path := fmt.Sprintf("/bench-limit-%d", time.Now().UnixNano())
	if _, err := c.Create(path, nil, 0, acl); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	for i := 0; i < warmup; i++ {
		if _, err := c.Set(path, []byte("w"), -1); err != nil {
			return fmt.Errorf("set %s: %w", path, err)
		}
	}

	err = measure("setdata", ops, func() error {
		_, err := c.Set(path, []byte("x"), -1)
		return err
	})
	if err != nil {
		return err
	}
	return measure("createdelete", ops, func() error {
		p, err := c.Create(path+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return err
		}
		return c.Delete(p, -1)
	})
}

// measure runs op ops times one after another and prints the result line.
func measure(name string, ops int, op func() error) error {
	lat := make([]time.Duration, ops)
	t0 := time.Now()
	for i := range lat {
		t := time.Now()
		if err := op(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		lat[i] = time.Since(t)
	}
	secs := time.Since(t0).Seconds()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	fmt.Printf("limit %s clients=1 ops=%d secs=%.3f ops_per_s=%.1f p50_ms=%.3f p99_ms=%.3f\n",
		name, ops, secs, float64(ops)/secs, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]))
	return nil
}
