package zktest_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// start starts a cluster on the given backend, skipping (or failing under
// CI=true) when the backend is not available, and stops it at cleanup.
func start(t *testing.T, b zktest.Backend, opts ...zktest.Option) *zktest.Cluster {
	t.Helper()
	begin := time.Now()
	c, err := zktest.Start(context.Background(), append([]zktest.Option{zktest.WithBackend(b)}, opts...)...)
	zktest.RequireOrSkip(t, err)
	t.Logf("%s: %d server(s) serving after %v: %v", b, len(c.Servers()), time.Since(begin).Round(time.Millisecond), c.Servers())
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return c
}

// anyCluster starts a standalone server on whatever backend is available.
func anyCluster(t *testing.T) *zktest.Cluster {
	t.Helper()
	c, err := zktest.Start(context.Background())
	zktest.RequireOrSkip(t, err)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return c
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// events records the session events of a go-zookeeper connection.
type events struct {
	mu      sync.Mutex
	states  []zk.State
	changed chan struct{} // closed and replaced on each event
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) callback(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.states = append(e.states, ev.State)
	close(e.changed)
	e.changed = make(chan struct{})
}

// waitFor waits until state has been seen at least n times.
func (e *events) waitFor(t *testing.T, state zk.State, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		e.mu.Lock()
		seen := 0
		for _, s := range e.states {
			if s == state {
				seen++
			}
		}
		ch := e.changed
		states := append([]zk.State(nil), e.states...)
		e.mu.Unlock()
		if seen >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("state %v not seen %d times within %v; states: %v", state, n, timeout, states)
		}
	}
}

// connect opens a go-zookeeper connection, through dialer if not nil, and
// waits for its session.
func connect(t *testing.T, servers []string, sessionTimeout time.Duration, dialer zk.Dialer) (*zk.Conn, *events) {
	t.Helper()
	ev := newEvents()
	var (
		conn *zk.Conn
		err  error
	)
	if dialer != nil {
		conn, _, err = zk.Connect(servers, sessionTimeout, zk.WithLogger(nopLogger{}), zk.WithEventCallback(ev.callback), zk.WithDialer(dialer))
	} else {
		conn, _, err = zk.Connect(servers, sessionTimeout, zk.WithLogger(nopLogger{}), zk.WithEventCallback(ev.callback))
	}
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Close)
	ev.waitFor(t, zk.StateHasSession, 1, 15*time.Second)
	return conn, ev
}

// srvr runs srvr on addr with a short deadline.
func srvr(addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "", err
	}
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if len(out) > 0 {
				return string(out), nil
			}
			return "", err
		}
	}
}
