// Package attack_test probes the promises of zkrecipes' public documentation
// by combining features, faults and bystanders. It uses only the public API.
// TestFinding_* tests fail on the code they were written against (a broken
// promise); TestProbe_* tests pass and guard an important combination.
package attack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// session connects a conn.Session to servers and closes it in Cleanup.
func session(t *testing.T, servers []string, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	opts = append([]conn.Option{conn.WithSessionTimeout(4 * time.Second)}, opts...)
	s, err := conn.Connect(ctx, servers, opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type silent struct{}

func (silent) Printf(string, ...any) {}

// raw is a bystander: a plain go-zookeeper client, closed in Cleanup.
func raw(t *testing.T, c *zktest.Cluster) *zk.Conn {
	t.Helper()
	zc, ev, err := zk.Connect(c.Servers(), 5*time.Second, zk.WithLogger(silent{}))
	if err != nil {
		t.Fatalf("raw connect: %v", err)
	}
	t.Cleanup(zc.Close)
	deadline := time.After(10 * time.Second)
	for zc.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("raw client: no session")
		}
	}
	return zc
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children lists path's children through the bystander (nil if absent).
func children(zc *zk.Conn, path string) []string {
	ch, _, err := zc.Children(path)
	if err != nil {
		return nil
	}
	return ch
}

// watched reports whether server i lists a watch on path (wchp).
func watched(c *zktest.Cluster, i int, path string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := c.FourLetter(ctx, i, "wchp")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == path {
			return true
		}
	}
	return false
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
