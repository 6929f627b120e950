package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// terminal is the command running in a pseudo-terminal: everything it
// wrote, and the screen (what it wrote since it last cleared it).
type terminal struct {
	t    *testing.T
	pty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

const clearScreen = "\x1b[H\x1b[2J"

func startTerminal(t *testing.T, args ...string) *terminal {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "ZKRECIPES_TEST_MAIN=1")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 60, Cols: 220})
	require.NoError(t, err)
	term := &terminal{t: t, pty: f, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return // EIO once the command has exited
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		<-term.done
		f.Close()
		if t.Failed() {
			t.Logf("terminal output:\n%s", term.all())
		}
	})
	return term
}

func (term *terminal) all() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return strings.ReplaceAll(term.out.String(), "\r\n", "\n")
}

// screen is what the terminal shows: the output since the last clear.
func (term *terminal) screen() string {
	s := term.all()
	if i := strings.LastIndex(s, clearScreen); i >= 0 {
		s = s[i+len(clearScreen):]
	}
	return s
}

// waitScreen waits until the screen matches every pattern.
func (term *terminal) waitScreen(what string, patterns ...string) string {
	term.t.Helper()
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile(p)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := term.screen()
		ok := true
		for _, re := range res {
			ok = ok && re.MatchString(s)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the screen never showed %s (%q); last screen:\n%s", what, patterns, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchInTerminal runs `zkrecipes locks -watch` in a pseudo-terminal,
// connected through a proxy, against a real ZooKeeper while a mutex
// changes hands, and reads its screen back: the first holder and its
// waiter; a handoff as it happens; a blackhole that outlasts the session
// timeout shown as suspended, then lost, while a new waiter queues; the
// view rebuilt on a new session (the new waiter in it) and the next
// handoff shown; a cut connection shown as suspended then reconnected, the
// same session's watches still reporting a release; and Ctrl-C ending it
// with status 0.
func TestWatchInTerminal(t *testing.T) {
	c := testzk.Shared(t)
	proxy := zktest.NewProxy(t, c.Servers())
	root := testzk.Path(t, c, "app")
	lockPath := root + "/orders"
	ss := testzk.ConnectN(t, c.Servers(), 3)
	sid := make([]string, len(ss))
	for i, s := range ss {
		sid[i] = fmt.Sprintf("0x%x", testzk.Epoch(t, s).SessionID())
	}
	locks := make([]*mutex.InterProcessMutex, len(ss))
	for i, s := range ss {
		var err error
		locks[i], err = mutex.New(s, lockPath)
		require.NoError(t, err)
	}
	a := contend(t, locks[0])
	a.waitHeld(t)
	b := contend(t, locks[1])
	waitNodes(t, ss[0], lockPath, 2)

	term := startTerminal(t, "-servers", servers(proxy.Addrs()), "-session-timeout", "2s", "locks", "-watch", root)
	line := func(status, session string) string {
		return `(?m)^\s+` + status + `\s+mutex\s+\S+-lock-\d+\s+` + session + `\s`
	}
	term.waitScreen("the holder and its waiter", `session connected`, line("holds", sid[0]), line("waits", sid[1]))

	a.Release(t)
	term.waitScreen("the handoff", `handoff \S+ \[zkrecipes[^]]*\] -> \S+ \[zkrecipes`, line("holds", sid[1]))

	proxy.Blackhole()
	term.waitScreen("the session suspended", `session SUSPENDED`, `session 0x[0-9a-f]+ suspended`)
	c3 := contend(t, locks[2])
	waitNodes(t, ss[0], lockPath, 2)
	term.waitScreen("the session lost", `session LOST`, `session 0x[0-9a-f]+ lost \(.*(session timeout|timed out)`)
	proxy.Heal()
	term.waitScreen("the view rebuilt on a new session", `session connected`, `new session 0x[0-9a-f]+: view rebuilt`,
		line("holds", sid[1]), line("waits", sid[2]))

	b.Release(t)
	c3.waitHeld(t)
	term.waitScreen("the handoff after the new session", line("holds", sid[2]), `handoff \S+ \[zkrecipes[^]]*\] -> \S+ \[zkrecipes`)
	require.Equal(t, 2, strings.Count(term.screen(), "handoff"), "two handoffs in the events")

	proxy.Cut()
	term.waitScreen("the same session back", `reconnected \(same session, watches kept\)`, `session connected`)
	c3.Release(t)
	term.waitScreen("the release after the reconnect", `free, nobody queued`, `no lock queues under `+regexp.QuoteMeta(root))

	_, err := io.WriteString(term.pty, "\x03") // Ctrl-C: the terminal sends SIGINT
	require.NoError(t, err)
	require.NoError(t, term.cmd.Wait(), "exit status after Ctrl-C")
}
