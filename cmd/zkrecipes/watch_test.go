package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchPlain runs -watch into a pipe, as text and as JSON, while a
// mutex changes hands: the text prints the handoff as an event line, then
// the view; the JSON prints one document per line, the last one with the
// handoff among its events and the new holder in its view. Cancelling
// (Ctrl-C) ends it with status 0.
func TestWatchPlain(t *testing.T) {
	c := testzk.Shared(t)
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			root := testzk.Path(t, c, "app")
			lockPath := root + "/orders"
			ss := testzk.ConnectN(t, c.Servers(), 2)
			var locks []*mutex.InterProcessMutex
			for _, s := range ss {
				m, err := mutex.New(s, lockPath)
				require.NoError(t, err)
				locks = append(locks, m)
			}
			a := contend(t, locks[0])
			a.waitHeld(t)
			b := contend(t, locks[1])
			waitNodes(t, ss[0], lockPath, 2)
			second := fmt.Sprintf("0x%x", testzk.Epoch(t, ss[1]).SessionID())

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, stderr syncBuffer
			args := []string{"-servers", servers(c.Servers()), "locks", "-watch", root}
			if asJSON {
				args = append([]string{"-json"}, args...)
			}
			code := make(chan int, 1)
			go func() { code <- run(ctx, args, &out, &stderr, false) }()
			testzk.Eventually(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "waits") }, "the first view")
			a.Release(t)
			b.waitHeld(t)
			if asJSON {
				testzk.Eventually(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "handoff") }, "the handoff")
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				var doc struct {
					Session string
					Events  []string
					View    LocksView
				}
				require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &doc))
				assert.Equal(t, "connected", doc.Session)
				require.Len(t, doc.Events, 1)
				assert.Contains(t, doc.Events[0], "orders (mutex): handoff ")
				require.Len(t, doc.View.Queues, 1)
				require.Len(t, doc.View.Queues[0].Nodes, 1)
				assert.Equal(t, second, doc.View.Queues[0].Nodes[0].Session)
				assert.Equal(t, statusHolds, doc.View.Queues[0].Nodes[0].Status)
			} else {
				testzk.Eventually(t, 30*time.Second, func() bool {
					s := out.String()
					i := strings.Index(s, "(mutex): handoff ")
					return i >= 0 && strings.Contains(s[i:], "holds   mutex") && strings.Contains(s[i:], second)
				}, "the handoff, then the view")
				assert.NotContains(t, out.String(), clearScreen, "no terminal control codes into a pipe")
			}
			cancel()
			select {
			case got := <-code:
				assert.Equal(t, exitOK, got, "stderr: %s", stderr.String())
			case <-time.After(30 * time.Second):
				t.Fatal("-watch did not end when cancelled")
			}
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}

// TestWatchLeader runs `leader -watch` into a pipe while the leader
// resigns: the handoff to the follower is printed, then the view with the
// follower leading.
func TestWatchLeader(t *testing.T) {
	c := testzk.Shared(t)
	path := testzk.Path(t, c, "leader")
	ss := testzk.ConnectN(t, c.Servers(), 2)
	var ks []*contender
	for i, s := range ss {
		e, err := leader.New(s, path, fmt.Sprintf("node-%d", i))
		require.NoError(t, err)
		ks = append(ks, contendWith(t, e.Campaign, func(ctx context.Context, _ *conn.Lease) error { return e.Resign(ctx) }))
		if i == 0 {
			ks[0].waitHeld(t)
		}
	}
	waitNodes(t, ss[0], path, 2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-servers", servers(c.Servers()), "leader", "-watch", path}, &out, &stderr, false)
	}()
	testzk.Eventually(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "follows") }, "the first view")
	ks[0].Release(t)
	ks[1].waitHeld(t)
	testzk.Eventually(t, 30*time.Second, func() bool {
		s := out.String()
		i := strings.Index(s, "(leader): handoff ")
		return i >= 0 && strings.Contains(s[i:], `participant id="node-0"] -> `) &&
			regexp.MustCompile(`(?m)^\s+leads\s+leader\s+.*participant id="node-1"`).MatchString(s[i:])
	}, "the handoff, then the view")
	cancel()
	assert.Equal(t, exitOK, <-code, "stderr: %s", stderr.String())
	if t.Failed() {
		t.Logf("output:\n%s", out.String())
	}
}
