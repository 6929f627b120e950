package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/lock"
)

// contender runs one lock of ours in a goroutine of its own (the mutex and
// the read/write lock are owned by the goroutine that acquired them):
// Acquire, then hold until release is called, then Release. acquired is
// closed once it holds. The goroutine ends by t.Cleanup.
type contender struct {
	acquired chan struct{}
	release  chan struct{}
	done     chan struct{}
	once     sync.Once
}

func contend(t *testing.T, l lock.Locker) *contender {
	t.Helper()
	return contendWith(t, l.Acquire, func(ctx context.Context, _ *conn.Lease) error { return l.Release(ctx) })
}

// contendWith is contend for a lock with other calls (a semaphore's lease,
// an election).
func contendWith(t *testing.T, acquire func(context.Context) (*conn.Lease, error), release func(context.Context, *conn.Lease) error) *contender {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &contender{acquired: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		lease, err := acquire(ctx)
		if err != nil {
			return // cancelled by the cleanup
		}
		close(c.acquired)
		select {
		case <-c.release:
		case <-ctx.Done():
		}
		_ = release(context.Background(), lease)
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c
}

// Release lets the contender release (once it holds) and waits for it to
// be done.
func (c *contender) Release(t *testing.T) {
	t.Helper()
	c.once.Do(func() { close(c.release) })
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("contender did not release")
	}
}

// waitHeld waits for the contender to hold.
func (c *contender) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-c.acquired:
	case <-time.After(30 * time.Second):
		t.Fatal("contender did not acquire")
	}
}

// waitNodes waits until path has n children.
func waitNodes(t *testing.T, s *conn.Session, path string, n int) {
	t.Helper()
	testzk.Eventually(t, 30*time.Second, func() bool { return len(testzk.Children(t, s, path)) == n },
		"%s: want %d children", path, n)
}

// peer starts a foreign client (Curator, kazoo) that runs until its input
// ends: closed, and the process waited for, in t.Cleanup.
func peer(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
}

// command runs the command in the test process, as main would.
func command(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e, false)
	return o.String(), e.String(), code
}

func servers(ss []string) string { return strings.Join(ss, ",") }
