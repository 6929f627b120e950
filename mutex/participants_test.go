package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/testzk"
)

// Participants on a closed session fails with conn.ErrClosed, saying the
// recipe, what it was doing and the lock's path once.
func TestParticipantsAfterClose(t *testing.T) {
	c := testzk.Shared(t)
	s := testzk.Connect(t, c.Servers())
	path := testzk.Path(t, c, "lock")
	m := newMutex(t, s, path)
	ctx := testzk.Ctx(t, 10*time.Second)
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps, "nobody, and no lock path yet")
	require.NoError(t, s.Close())
	_, err = m.Participants(ctx)
	assert.ErrorIs(t, err, conn.ErrClosed)
	assert.EqualError(t, err, "mutex: participants of "+path+": "+conn.ErrClosed.Error())
}
