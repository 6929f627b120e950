package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// serverCPU is the CPU time (user + system, clock ticks of 10 ms) the
// processes pids have used so far.
func serverCPU(pids []string) (int, error) {
	t := 0
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			return 0, err
		}
		// The command name (field 2) may hold spaces: count from its ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		u, _ := strconv.Atoi(f[11])
		s, _ := strconv.Atoi(f[12])
		t += u + s
	}
	return t, nil
}

// cost runs each kind of request a handoff is made of n times in a row from
// one client on server, three times, and prints the servers' CPU time and
// the wall time per request (or pair) for each; warmup passes over every
// kind, n of each, run first and are not printed.
func cost(server string, pids []string, n, warmup int) error {
	fmt.Printf("# warm-up: %d unrecorded pass(es) of %d requests of every kind before the measured ones\n", warmup, n)
	c, err := connect(server)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.AddAuth("digest", []byte("bench:secret")); err != nil {
		return err
	}
	base := fmt.Sprintf("/handoff-cost-%d", time.Now().UnixNano())
	if _, err := c.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	for i := 0; i < 10; i++ { // a queue of ten for the listing
		if _, err := c.Create(fmt.Sprintf("%s/_c_%d-lock-%010d", base, i, i), []byte(`{"host":"h","pid":1}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return err
		}
	}
	// A sealed node's ACL (Queue.NodeACL): everyone reads, one digest
	// identity does everything.
	sealed := append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "bench", "secret")...)
	node, seq := base+"/n", base+"/_c_x-lock-"
	one := base + "/_c_1-lock-0000000001"
	kinds := []struct {
		name string
		f    func() error
	}{
		{"create+delete", func() error {
			if _, err := c.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				return err
			}
			return c.Delete(node, -1)
		}},
		{"create_sealed+delete", func() error {
			if _, err := c.Create(node, nil, zk.FlagEphemeral, sealed); err != nil {
				return err
			}
			return c.Delete(node, -1)
		}},
		{"create_sealed+multi(mark,delete)", func() error {
			if _, err := c.Create(node, nil, zk.FlagEphemeral, sealed); err != nil {
				return err
			}
			_, err := c.Multi(&zk.SetDataRequest{Path: node, Data: []byte("released"), Version: 0}, &zk.DeleteRequest{Path: node, Version: -1})
			return err
		}},
		{"create_sequential+delete", func() error {
			p, err := c.Create(seq, nil, zk.FlagEphemeral|zk.FlagSequence, sealed)
			if err != nil {
				return err
			}
			return c.Delete(p, -1)
		}},
		{"getChildren(10)", func() error { _, _, err := c.Children(base); return err }},
		{"getData", func() error { _, _, err := c.Get(one); return err }},
		{"getACL", func() error { _, _, err := c.GetACL(one); return err }},
		{"exists", func() error { _, _, err := c.Exists(one); return err }},
		{"sync", func() error { _, err := c.Sync(base); return err }},
	}
	for w := 0; w < warmup; w++ {
		for _, k := range kinds {
			for i := 0; i < n; i++ {
				if err := k.f(); err != nil {
					return fmt.Errorf("warm-up: %s: %w", k.name, err)
				}
			}
		}
	}
	for _, k := range kinds {
		for r := 0; r < 3; r++ {
			c0, err := serverCPU(pids)
			if err != nil {
				return err
			}
			t0 := time.Now()
			for i := 0; i < n; i++ {
				if err := k.f(); err != nil {
					return fmt.Errorf("%s: %w", k.name, err)
				}
			}
			wall := time.Since(t0)
			c1, err := serverCPU(pids)
			if err != nil {
				return err
			}
			fmt.Printf("cost %s server_cpu_ms=%.3f wall_ms=%.3f\n", k.name, float64(c1-c0)*10/float64(n), ms(wall)/float64(n))
		}
	}
	return nil
}
