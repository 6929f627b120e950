package conn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// TestConnectSaysWhyTheLastAttemptFailed: a Connect whose ctx ends before
// any server gives a session says why the last try failed, whether the
// server refused the TCP connection or never answered the connect request,
// and still matches ctx's error.
func TestConnectSaysWhyTheLastAttemptFailed(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := conn.Connect(ctx, []string{"127.0.0.1:1"})
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "last attempt: dialing 127.0.0.1:1")
		assert.ErrorContains(t, err, "refused")
	})
	t.Run("silent", func(t *testing.T) {
		c := zktest.New(t)
		require.NoError(t, c.Pause(0))
		t.Cleanup(func() { _ = c.Resume(0) })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := conn.Connect(ctx, c.Servers(), conn.WithSessionTimeout(time.Second))
		require.Error(t, err)
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		assert.ErrorContains(t, err, "did not answer the connect request within")
	})
}

// TestSessionIDAtStart: right after Connect, Session.SessionID is the live
// epoch's ZooKeeper session id, which a service logs at start-up (the first
// Connected came before any Subscribe could see it); 0 after Close.
func TestSessionIDAtStart(t *testing.T) {
	c := zktest.New(t)
	s := connect(t, c.Servers())
	id := s.SessionID()
	assert.NotZero(t, id)
	assert.Equal(t, epoch(t, s).SessionID(), id)
	require.NoError(t, s.Close())
	assert.Zero(t, s.SessionID())
}
