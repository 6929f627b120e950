package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// serverCPU is the CPU time (user + system, clock ticks of 10 ms) the
// processes pids have used so far, and the part of it their JIT compiler
// threads (HotSpot's C1 and C2 CompilerThreads) used.
func serverCPU(pids []string) (t, jit int, err error) {
	for _, p := range pids {
		n, err := ticks("/proc/" + p + "/stat")
		if err != nil {
			return 0, 0, err
		}
		t += n
		tasks, _ := filepath.Glob("/proc/" + p + "/task/*")
		for _, task := range tasks {
			comm, err := os.ReadFile(task + "/comm")
			if err != nil || !strings.HasPrefix(string(comm), "C1 CompilerThre") && !strings.HasPrefix(string(comm), "C2 CompilerThre") {
				continue
			}
			if n, err := ticks(task + "/stat"); err == nil {
				jit += n
			}
		}
	}
	return t, jit, nil
}

// ticks reads a /proc stat file's user + system time.
func ticks(stat string) (int, error) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s, nil
}

// cost runs each kind of request a handoff is made of n times in a row from
// one client on server, reps times (the kinds in turn, so that a drift of
// the machine spreads over all of them), and prints the servers' CPU time
// and the wall time per request (or group) for each; warmup passes over
// every kind, n of each, run first and are not printed. The last kinds are
// one contended handoff's requests of each library, one after another
// (zk.Lock: create, getChildren, getData with a watch, getChildren after
// the notification, delete; zkrecipes' mutex: sealed create, getChildren,
// getData with a watch beside getACL, multi(mark, delete)), and idle is
// what the servers use doing nothing, per millisecond of wall time.
// jit_ms is the part of server_cpu_ms the servers' JIT compilers took.
func cost(server string, pids []string, n, reps, warmup int) error {
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
	big := base + "/fifty" // and a queue of fifty
	if _, err := c.Create(big, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	for i := 0; i < 50; i++ {
		if _, err := c.Create(fmt.Sprintf("%s/_c_%032x-lock-%010d", big, i, i), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return err
		}
	}
	// A sealed node's ACL (Queue.NodeACL): everyone reads, one digest
	// identity does everything.
	sealed := append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "bench", "secret")...)
	world := zk.WorldACL(zk.PermAll)
	// A contender node's data as the mutex writes it (locknode.EncodeData).
	data := []byte(`{"id":"0f8e1c2a-5b7d-4e3f-9a6b-1c2d3e4f5a6b","host":"bench-host.example","pid":12345,"sealed":true}`)
	node, seq := base+"/n", base+"/_c_0f8e1c2a-5b7d-4e3f-9a6b-1c2d3e4f5a6b-lock-"
	one := base + "/_c_1-lock-0000000001"
	mark := func(p string) error {
		_, err := c.Multi(&zk.SetDataRequest{Path: p, Data: []byte("released"), Version: 0}, &zk.DeleteRequest{Path: p, Version: -1})
		return err
	}
	del := func(p string) error { return c.Delete(p, -1) }
	createSeq := func(d []byte, acl []zk.ACL, release func(string) error) func() error {
		return func() error {
			p, err := c.Create(seq, d, zk.FlagEphemeral|zk.FlagSequence, acl)
			if err != nil {
				return err
			}
			return release(p)
		}
	}
	// getWACL is the waiter's two reads, sent together as the mutex does.
	getWACL := func() error {
		errc := make(chan error, 1)
		go func() { _, _, err := c.GetACL(one); errc <- err }()
		_, _, _, err := c.GetW(one)
		if err2 := <-errc; err == nil {
			err = err2
		}
		return err
	}
	kinds := []struct {
		name string
		f    func() error
	}{
		{"create+delete", func() error {
			if _, err := c.Create(node, nil, zk.FlagEphemeral, world); err != nil {
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
			return mark(node)
		}},
		{"gozk:create_protected_sequential+delete", func() error {
			p, err := c.CreateProtectedEphemeralSequential(base+"/lock-", nil, world)
			if err != nil {
				return err
			}
			return del(p)
		}},
		{"create_sequential(data)+delete", createSeq(data, world, del)},
		{"create_sequential(data,sealed)+delete", createSeq(data, sealed, del)},
		{"create_sequential(data)+multi(mark,delete)", createSeq(data, world, mark)},
		{"ours:create_sequential(data,sealed)+multi(mark,delete)", createSeq(data, sealed, mark)},
		{"getChildren(10)", func() error { _, _, err := c.Children(base); return err }},
		{"getChildren(50)", func() error { _, _, err := c.Children(big); return err }},
		{"getData", func() error { _, _, err := c.Get(one); return err }},
		{"getW", func() error { _, _, _, err := c.GetW(one); return err }},
		{"getACL", func() error { _, _, err := c.GetACL(one); return err }},
		{"getW+getACL(together)", getWACL},
		{"exists", func() error { _, _, err := c.Exists(one); return err }},
		{"sync", func() error { _, err := c.Sync(base); return err }},
		{"gozk:handoff_requests(10)", func() error {
			p, err := c.CreateProtectedEphemeralSequential(base+"/lock-", nil, world)
			if err != nil {
				return err
			}
			if _, _, err := c.Children(base); err != nil {
				return err
			}
			if _, _, _, err := c.GetW(one); err != nil {
				return err
			}
			if _, _, err := c.Children(base); err != nil {
				return err
			}
			return del(p)
		}},
		{"ours:handoff_requests(10)", func() error {
			p, err := c.Create(seq, data, zk.FlagEphemeral|zk.FlagSequence, sealed)
			if err != nil {
				return err
			}
			if _, _, err := c.Children(base); err != nil {
				return err
			}
			if err := getWACL(); err != nil {
				return err
			}
			return mark(p)
		}},
		{"idle(per ms)", func() error { time.Sleep(5 * time.Millisecond); return nil }},
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
	for r := 0; r < reps; r++ {
		for _, k := range kinds {
			c0, j0, err := serverCPU(pids)
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
			c1, j1, err := serverCPU(pids)
			if err != nil {
				return err
			}
			per := float64(n)
			if k.name == "idle(per ms)" { // per millisecond of wall time, not per call
				per = ms(wall)
			}
			fmt.Printf("cost %s server_cpu_ms=%.3f jit_ms=%.3f wall_ms=%.3f\n", k.name, float64(c1-c0)*10/per, float64(j1-j0)*10/per, ms(wall)/float64(n))
		}
	}
	return nil
}
