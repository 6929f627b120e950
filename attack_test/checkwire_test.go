package attack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestCheckWirePassesAndLeavesNoNode checks zktest.CheckWire's doc against
// the go-zookeeper this module pins: it "returns nil" for v1.0.4 itself,
// and "creates one ephemeral node at the namespace's root, cuts the
// connection once, and closes the session": once it returned, the node is
// gone and no session of it is left on the server.
func TestCheckWirePassesAndLeavesNoNode(t *testing.T) {
	f := newFixture(t)
	ns := f.Path("cw")
	ensure(t, f.Raw(), zkWorld, f.Root(), ns)
	require.NoError(t, zktest.CheckWire(ctxT(t, 30*time.Second), f.Servers(), conn.WithNamespace(ns)))
	if kids := children(f.Raw(), ns); len(kids) != 0 {
		t.Errorf("CheckWire returned and left %v at the namespace's root", kids)
	}
}

// TestCheckWireUnreachableIsNotAVersionVerdict: against servers that
// answer nothing (a blackholed proxy), CheckWire must keep its ctx's
// deadline and must not blame the go-zookeeper copy (an error matching
// conn.ErrZKVersion means "the copy does not keep what conn relies on";
// an unreachable server says nothing about the copy).
func TestCheckWireUnreachableIsNotAVersionVerdict(t *testing.T) {
	f := newFixture(t)
	p := f.Proxy()
	p.Blackhole()
	took, err := timed(context.Background(), time.Second, checkWire(p))
	t.Logf("CheckWire: %v after %v", err, took)
	require.Error(t, err)
	if took > 1250*time.Millisecond {
		t.Errorf("CheckWire returned %v after its 1 s deadline", took-time.Second)
	}
	if errors.Is(err, conn.ErrZKVersion) {
		t.Errorf("CheckWire blames the go-zookeeper copy for an unreachable server: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CheckWire's error does not match context.DeadlineExceeded: %v", err)
	}
}

// TestCheckWireCutMidCheckIsNotAVersionVerdict: the connection is
// blackholed after CheckWire's first few requests (a network fault during
// the check); it keeps its deadline and does not answer ErrZKVersion.
func TestCheckWireCutMidCheckIsNotAVersionVerdict(t *testing.T) {
	f := newFixture(t)
	for _, n := range []int{1, 2, 3} {
		p := f.Proxy()
		p.BlackholeAfterWrites(n)
		took, err := timed(context.Background(), 2*time.Second, checkWire(p))
		t.Logf("blackholed after write %d: CheckWire: %v after %v", n, err, took)
		if took > 2250*time.Millisecond {
			t.Errorf("n=%d: CheckWire returned %v after its 2 s deadline", n, took-2*time.Second)
		}
		if errors.Is(err, conn.ErrZKVersion) {
			t.Errorf("n=%d: CheckWire blames the go-zookeeper copy for a network fault: %v", n, err)
		}
		p.Close()
	}
}

// TestConnectKeepsDeadlineWhenUnreachable: Connect "waits, bounded by ctx
// alone": against a blackholed proxy it returns by its
// ctx's deadline (plus 250 ms) with an error matching
// context.DeadlineExceeded. CheckWire, which connects first, is held to
// the same.
func TestConnectKeepsDeadlineWhenUnreachable(t *testing.T) {
	f := newFixture(t)
	p := f.Proxy()
	p.Blackhole()
	for _, d := range []time.Duration{300 * time.Millisecond, time.Second} {
		took, err := timed(context.Background(), d, func(ctx context.Context) error {
			s, err := conn.Connect(ctx, p.Addrs(), conn.WithSessionTimeout(4*time.Second))
			if s != nil {
				_ = s.Close()
			}
			return err
		})
		t.Logf("deadline %v: Connect: %v after %v", d, err, took)
		require.Error(t, err)
		if took > d+250*time.Millisecond {
			t.Errorf("deadline %v: Connect returned %v after it", d, took-d)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("deadline %v: Connect's error does not match context.DeadlineExceeded: %v", d, err)
		}
	}
}

// checkWire is zktest.CheckWire through p (session timeout 4 s).
func checkWire(p *zktest.Proxy) func(context.Context) error {
	return func(ctx context.Context) error {
		return zktest.CheckWire(ctx, p.Addrs(), conn.WithSessionTimeout(4*time.Second))
	}
}
