package testzk

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// SessionTimeout is the session timeout Connect and ConnectN ask for
// unless an option says otherwise.
const SessionTimeout = 8 * time.Second

// Connect opens a session on servers (SessionTimeout, then opts) and
// closes it in t.Cleanup. It fails t if no session comes within 30 s.
func Connect(t testing.TB, servers []string, opts ...conn.Option) *conn.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := conn.Connect(ctx, servers, WithDefault(conn.WithSessionTimeout(SessionTimeout), opts)...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// ConnectN opens n sessions at once, as Connect does.
func ConnectN(t testing.TB, servers []string, n int, opts ...conn.Option) []*conn.Session {
	t.Helper()
	out := make([]*conn.Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = WithDefault(conn.WithSessionTimeout(SessionTimeout), opts)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = conn.Connect(ctx, servers, opts...)
		}()
	}
	wg.Wait()
	for _, s := range out {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	require.NoError(t, errors.Join(errs...))
	return out
}

// Epoch returns s's current epoch, failing t if none comes within 30 s.
func Epoch(t testing.TB, s *conn.Session) *conn.Epoch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := connlink.Of(s).Epoch(ctx)
	require.NoError(t, err)
	return ep
}

// Children lists path's children ([] if it does not exist).
func Children(t testing.TB, s *conn.Session, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, _, err := s.Children(ctx, path)
	if !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
	return names
}

// Requests is the number of requests s has sent so far.
func Requests(s *conn.Session) int64 { return connlink.Of(s).Stats().TotalRequests() }

// WatchesSet is the number of watches the server has confirmed to s so far
// (connlink.Stats.WatchesSet): a getW counts once its answer is back, so the
// watch is in place on the server.
func WatchesSet(s *conn.Session) int64 { return connlink.Of(s).Stats().WatchesSet }

// Watching waits (up to 10 s, else fails t) until the server has confirmed
// more watches to session s than the before it had: its waiter is parked
// on a watch that is in place. (Counting getW requests instead races: a
// request is counted when sent, and a node deleted before the request
// arrives is never watched.)
func Watching(t testing.TB, s *conn.Session, before int64) {
	t.Helper()
	Eventually(t, 10*time.Second, func() bool { return WatchesSet(s) > before }, "waiter watching")
}

// WithDefault is def, then opts, unless opts set what def sets (Connect
// refuses an option given twice): then opts alone. A new slice.
func WithDefault(def conn.Option, opts []conn.Option) []conn.Option {
	name := connlink.OptionName(def)
	for _, o := range opts {
		if name != "" && connlink.OptionName(o) == name {
			return slices.Clone(opts)
		}
	}
	return append([]conn.Option{def}, opts...)
}
