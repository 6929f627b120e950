package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// quiet fails the test if sub has a transition before until.
func quiet(t *testing.T, sub <-chan conn.Event, until time.Time, what string) {
	t.Helper()
	select {
	case ev := <-sub:
		t.Fatalf("%s: unexpected transition %s", what, describe(ev))
	case <-time.After(time.Until(until)):
	}
}

// TestServerFreezeCostsOneSession freezes the one server (SIGSTOP) for
// longer than the session timeout, three times in a row, under each local
// timer. Each freeze must cost exactly one epoch: one Lost, from the local
// timer while the server is frozen, then, once it resumes, one Connected
// whose epoch lives on (no transition for a whole session timeout after it
// began, and a request through it is answered). The new session's connect
// request was sent while the server was frozen: its timer must not count
// from then.
func TestServerFreezeCostsOneSession(t *testing.T) {
	const (
		timeout = 2 * time.Second
		freeze  = 5 * time.Second // the server expires the session when it resumes
		rounds  = 3
	)
	c := zktest.New(t)
	for _, quorum := range []bool{true, false} {
		t.Run(fmt.Sprintf("quorum=%v", quorum), func(t *testing.T) {
			s := connect(t, c.Servers(), timerOpts(quorum, conn.WithSessionTimeout(timeout))...)
			ep := epoch(t, s)
			require.Equal(t, timeout, connlink.Of(ep).Timeout())
			sub := subscribe(t, s)
			sessions := map[int64]bool{ep.SessionID(): true}
			for i := range rounds {
				paused := time.Now()
				require.NoError(t, c.Pause(0))
				lost := expectPast(t, sub, freeze, conn.Lost)
				assert.Same(t, ep, lost.Epoch, "round %d", i)
				assert.ErrorIs(t, lost.Err, conn.ErrSessionTimeout, "round %d: the local timer ends it", i)
				quiet(t, sub, paused.Add(freeze), "while the server is frozen")
				require.NoError(t, c.Resume(0))

				ev := expect(t, sub, 30*time.Second, conn.Connected)
				began := ev.Time
				t.Logf("round %d: Lost %v after the freeze began, Connected %v after the resume",
					i, lost.Time.Sub(paused).Round(time.Millisecond), began.Sub(paused.Add(freeze)).Round(time.Millisecond))
				assert.False(t, sessions[ev.Epoch.SessionID()], "round %d: a new session", i)
				sessions[ev.Epoch.SessionID()] = true
				ep = ev.Epoch
				quiet(t, sub, began.Add(timeout), fmt.Sprintf("round %d: the epoch that began after the resume", i))
				_, _, err := connlink.Of(ep).Exists(context.Background(), "/")
				require.NoError(t, err)
				require.NoError(t, ep.Err())
			}
			assert.Len(t, sessions, rounds+1, "one new session per freeze")
		})
	}
}
