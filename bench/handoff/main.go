// Command handoff times each step of a lock handoff between two sessions
// pinned to chosen servers of an ensemble (where does a handoff's time go
// on an ensemble?). For every pair (releaser's server, waiter's
// server) it runs ROUNDS ping-pong handoffs and prints medians:
//
//	go run ./bench/handoff -servers h:p1,h:p2,h:p3 [-rounds 200]
//
// Lines, all times in milliseconds (median over the rounds):
//
//	raw rel=R wait=W delete_rtt delete_event multi_rtt multi_event children_rtt conn_multi_rtt conn_multi_event
//	lib rel=R wait=W zkrecipes_release zkrecipes_handoff gozk_release gozk_handoff
//
// raw: go-zookeeper alone. The releaser deletes a node (delete_rtt: its
// answer) or marks and deletes it in one multi (multi_rtt); the waiter, on
// its own session, has a watch on the node: *_event is from the releaser's
// send to the waiter's event. children_rtt is one getChildren of the
// waiter after its event (what zk.Lock does before it holds). conn_multi_*
// is the multi again with both sessions of package conn (its cost over
// go-zookeeper alone).
//
// lib: zkrecipes' mutex and go-zookeeper's zk.Lock, one contender each on
// the two sessions: *_release is the release call's time, *_handoff from
// the release call to the waiter's Acquire (Lock) returning.
//
// R and W name the servers by their mode (L leader, F1/F2 followers).
//
// A fresh server runs its first requests slowly while its JIT compiles
// them, so the first pair measured would lose: before the measured rounds,
// -warmup N (default 1) unrecorded rounds of the same steps and size run
// on every server (each as both releaser and waiter); the first output
// line says so. -warmup 0 measures the servers as they are.
//
// With -cost PIDS (the servers' process ids, on this machine), it measures
// instead what each kind of request of a handoff costs the servers: 1,000
// of one kind in a row from one client on the first server, -reps times
// (3), each line the servers' CPU time per request (from /proc, all PIDS
// summed; J of it their JIT compilers) and the wall time, after -warmup N
// unrecorded passes over every kind:
//
//	cost KIND server_cpu_ms=C jit_ms=J wall_ms=W
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/mutex"
)

func main() {
	servers := flag.String("servers", os.Getenv("ZK_SERVERS"), "ZooKeeper servers host:port,...")
	rounds := flag.Int("rounds", 200, "handoffs per measurement")
	pids := flag.String("cost", "", "server pids p1,p2,...: measure what each request costs the servers instead (see cost.go)")
	warmup := flag.Int("warmup", 1, "unrecorded warm-up rounds of the same size on every server before the measured ones; 0: none")
	reps := flag.Int("reps", 3, "with -cost: measured repetitions of every kind")
	flag.Parse()
	var err error
	switch {
	case *warmup < 0 || *reps < 1:
		fmt.Fprintln(os.Stderr, "handoff: -warmup must be at least 0 and -reps at least 1")
		os.Exit(2)
	case *pids != "":
		err = cost(strings.Split(*servers, ",")[0], strings.Split(*pids, ","), 1000, *reps, *warmup)
	default:
		err = run(strings.Split(*servers, ","), *rounds, *warmup)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "handoff:", err)
		os.Exit(1)
	}
}

func run(servers []string, rounds, warmup int) error {
	fmt.Printf("# warm-up: %d unrecorded round(s) of %d handoffs on every server before the measured ones\n", warmup, rounds)
	names := make([]string, len(servers))
	f := 0
	for i, s := range servers {
		mode, err := mode(s)
		if err != nil {
			return err
		}
		if mode == "leader" || mode == "standalone" {
			names[i] = "L"
		} else {
			f++
			names[i] = fmt.Sprintf("F%d", f)
		}
		fmt.Printf("# %s %s (%s)\n", names[i], s, mode)
	}
	for w := 0; w < warmup; w++ {
		for _, s := range servers {
			if _, err := rawRound(s, s, rounds); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
			if _, err := libRound(s, s, rounds); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	for i := range servers {
		for j := range servers {
			raw, err := rawRound(servers[i], servers[j], rounds)
			if err != nil {
				return err
			}
			fmt.Printf("raw rel=%s wait=%s delete_rtt=%.2f multi_rtt=%.2f delete_event=%.2f multi_event=%.2f children_rtt=%.2f conn_multi_rtt=%.2f conn_multi_event=%.2f\n",
				names[i], names[j], raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6])
			lib, err := libRound(servers[i], servers[j], rounds)
			if err != nil {
				return err
			}
			fmt.Printf("lib rel=%s wait=%s zkrecipes_release=%.2f zkrecipes_handoff=%.2f gozk_release=%.2f gozk_handoff=%.2f\n",
				names[i], names[j], lib[0], lib[1], lib[2], lib[3])
		}
	}
	return nil
}

// mode asks a server's srvr four-letter word for its mode.
func mode(server string) (string, error) {
	c, err := net.DialTimeout("tcp", server, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("%s: no mode in srvr's answer", server)
}

// connectTimeout bounds the wait for a conn session.
const connectTimeout = 15 * time.Second

func connect(server string) (*zk.Conn, error) {
	c, ev, err := zk.Connect([]string{server}, 30*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return nil, err
	}
	for e := range ev {
		if e.State == zk.StateHasSession {
			go func() {
				for range ev {
				}
			}()
			return c, nil
		}
	}
	return nil, fmt.Errorf("%s: no session", server)
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// rawRound: delete_rtt, multi_rtt, delete_event, multi_event,
// children_rtt, and the multi through conn (conn_multi_rtt,
// conn_multi_event: releaser and waiter on conn sessions).
func rawRound(rel, wait string, rounds int) ([7]float64, error) {
	var out [7]float64
	ctx := context.Background()
	a, err := connect(rel)
	if err != nil {
		return out, fmt.Errorf("connect: %w", err)
	}
	defer a.Close()
	b, err := connect(wait)
	if err != nil {
		return out, fmt.Errorf("connect: %w", err)
	}
	defer b.Close()
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	sa, err := conn.Connect(cctx, []string{rel})
	if err != nil {
		return out, fmt.Errorf("conn.Connect: %w", err)
	}
	defer sa.Close()
	sb, err := conn.Connect(cctx, []string{wait})
	if err != nil {
		return out, fmt.Errorf("conn.Connect: %w", err)
	}
	defer sb.Close()
	ea, err := connlink.Of(sa).Epoch(ctx)
	if err != nil {
		return out, fmt.Errorf("sa.Epoch: %w", err)
	}
	eb, err := connlink.Of(sb).Epoch(ctx)
	if err != nil {
		return out, fmt.Errorf("sb.Epoch: %w", err)
	}
	base := fmt.Sprintf("/handoff-raw-%d", time.Now().UnixNano())
	if _, err := a.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return out, fmt.Errorf("create base: %w", err)
	}
	defer a.Delete(base, -1)
	var dRTT, mRTT, dEv, mEv, cRTT, cmRTT, cmEv []float64
	node := base + "/n"
	for r := 0; r < rounds; r++ {
		for mode := 0; mode < 3; mode++ {
			if _, err := a.Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				return out, fmt.Errorf("create: %w", err)
			}
			var ch <-chan zk.Event
			for try := 0; ; try++ { // b's server may apply the create after a's (a leader may, after a sync)
				if mode == 2 {
					_, _, ch, err = connlink.Of(eb).GetW(ctx, node)
				} else {
					_, _, ch, err = b.GetW(node)
				}
				if !errors.Is(err, zk.ErrNoNode) || try == 1000 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if err != nil {
				return out, fmt.Errorf("getW: %w", err)
			}
			time.Sleep(settle) // as long as the library rounds wait before a release
			ops := []any{&zk.SetDataRequest{Path: node, Data: []byte("x"), Version: -1}, &zk.DeleteRequest{Path: node, Version: -1}}
			t0 := time.Now()
			switch mode {
			case 0:
				err = a.Delete(node, -1)
			case 1:
				_, err = a.Multi(ops...)
			case 2:
				_, err = connlink.Of(ea).Multi(ctx, ops...)
			}
			if err != nil {
				return out, fmt.Errorf("release: %w", err)
			}
			rtt := time.Since(t0)
			<-ch
			ev := time.Since(t0)
			switch mode {
			case 0:
				dRTT, dEv = append(dRTT, ms(rtt)), append(dEv, ms(ev))
				t1 := time.Now()
				if _, _, err := b.Children(base); err != nil {
					return out, fmt.Errorf("children: %w", err)
				}
				cRTT = append(cRTT, ms(time.Since(t1)))
			case 1:
				mRTT, mEv = append(mRTT, ms(rtt)), append(mEv, ms(ev))
			case 2:
				cmRTT, cmEv = append(cmRTT, ms(rtt)), append(cmEv, ms(ev))
			}
		}
	}
	return [7]float64{median(dRTT), median(mRTT), median(dEv), median(mEv), median(cRTT), median(cmRTT), median(cmEv)}, nil
}

// libRound: zkrecipes_release, zkrecipes_handoff, gozk_release, gozk_handoff.
func libRound(rel, wait string, rounds int) ([4]float64, error) {
	var out [4]float64
	ctx := context.Background()
	path := fmt.Sprintf("/handoff-lib-%d", time.Now().UnixNano())
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	sa, err := conn.Connect(cctx, []string{rel})
	if err != nil {
		return out, fmt.Errorf("conn.Connect: %w", err)
	}
	defer sa.Close()
	sb, err := conn.Connect(cctx, []string{wait})
	if err != nil {
		return out, fmt.Errorf("conn.Connect: %w", err)
	}
	defer sb.Close()
	watcher, err := connect(rel)
	if err != nil {
		return out, fmt.Errorf("connect: %w", err)
	}
	defer watcher.Close()
	ma, err := mutex.New(sa, path+"/ours")
	if err != nil {
		return out, fmt.Errorf("mutex.New: %w", err)
	}
	mb, err := mutex.New(sb, path+"/ours")
	if err != nil {
		return out, fmt.Errorf("mutex.New: %w", err)
	}
	var oRel, oHand []float64
	done := make(chan error, 1)
	for r := 0; r < rounds; r++ {
		if _, err := ma.Acquire(ctx); err != nil {
			return out, fmt.Errorf("zkrecipes acquire: %w", err)
		}
		got := make(chan time.Time, 1)
		errc := make(chan error, 1)
		go func() { // Acquire and Release from one goroutine (reentrancy is per goroutine)
			if _, err := mb.Acquire(ctx); err != nil {
				errc <- err
				return
			}
			got <- time.Now()
			done <- mb.Release(ctx)
		}()
		if err := queued(watcher, path+"/ours", 2); err != nil {
			return out, fmt.Errorf("zkrecipes queue: %w", err)
		}
		t0 := time.Now()
		if err := ma.Release(ctx); err != nil {
			return out, fmt.Errorf("zkrecipes release: %w", err)
		}
		oRel = append(oRel, ms(time.Since(t0)))
		select {
		case t := <-got:
			oHand = append(oHand, ms(t.Sub(t0)))
		case err := <-errc: // Acquire failed; got is only sent after a grant
			return out, fmt.Errorf("zkrecipes waiter's acquire: %w", err)
		}
		if err := <-done; err != nil {
			return out, fmt.Errorf("zkrecipes waiter's release: %w", err)
		}
	}
	za, err := connect(rel)
	if err != nil {
		return out, fmt.Errorf("connect: %w", err)
	}
	defer za.Close()
	zb, err := connect(wait)
	if err != nil {
		return out, fmt.Errorf("connect: %w", err)
	}
	defer zb.Close()
	la := zk.NewLock(za, path+"/gozk", zk.WorldACL(zk.PermAll))
	lb := zk.NewLock(zb, path+"/gozk", zk.WorldACL(zk.PermAll))
	var gRel, gHand []float64
	for r := 0; r < rounds; r++ {
		if err := la.Lock(); err != nil {
			return out, fmt.Errorf("zk.Lock lock: %w", err)
		}
		got := make(chan time.Time, 1)
		errc := make(chan error, 1)
		go func() {
			if err := lb.Lock(); err != nil {
				errc <- err
				return
			}
			got <- time.Now()
		}()
		if err := queued(watcher, path+"/gozk", 2); err != nil {
			return out, fmt.Errorf("zk.Lock queue: %w", err)
		}
		t0 := time.Now()
		if err := la.Unlock(); err != nil {
			return out, fmt.Errorf("zk.Lock unlock: %w", err)
		}
		gRel = append(gRel, ms(time.Since(t0)))
		select {
		case t := <-got:
			gHand = append(gHand, ms(t.Sub(t0)))
		case err := <-errc:
			return out, fmt.Errorf("zk.Lock waiter's lock: %w", err)
		}
		if err := lb.Unlock(); err != nil {
			return out, fmt.Errorf("zk.Lock waiter's unlock: %w", err)
		}
	}
	return [4]float64{median(oRel), median(oHand), median(gRel), median(gHand)}, nil
}

// settle is how long a round waits, once the waiter is queued, before the
// release: the waiter's watch is set by then (both libraries send it
// right behind their listing), and every kind of round is measured after
// the same idle time.
const settle = 5 * time.Millisecond

// queued waits until path has n children and then settle, so the last
// one's waiter has sent its watch.
func queued(c *zk.Conn, path string, n int) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		kids, _, err := c.Children(path)
		if err == nil && len(kids) >= n {
			time.Sleep(settle)
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("%s: %d contenders never queued", path, n)
}
