package locktest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/lock"
)

// maxLabel is the bound lock.WithLabel documents, in bytes.
const maxLabel = 256

// testLabel: an acquire whose ctx carries a label over maxLabel bytes (or
// not printable text) fails with conn.ErrInvalidArgument, saying what is
// wrong with it (the bound, for a long one), and creates nothing; one with a valid label writes it into
// the node it holds. A lock WithoutLabel (a leader's) neither writes nor
// checks one.
func (s *suite) testLabel(t *testing.T) {
	path := UniquePath(s.cluster, "label")
	sess := Connect(t, s.cluster.Servers(), s.cfg.sessionTimeout)
	lk := s.newLock(t, sess, path)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.cfg.noLabel {
		l, err := lk.Acquire(lock.WithLabel(ctx, "job\n7"))
		require.NoError(t, err, "a label it does not write is not checked")
		assert.NotNil(t, l)
		mustRelease(t, lk, 10*time.Second)
		return
	}

	for bad, says := range map[string]string{
		strings.Repeat("x", maxLabel+1): "label is 257 bytes, at most 256",
		"job\n7":                        "holds control characters",
		"\xff":                          "label is not valid UTF-8",
	} {
		l, err := lk.Acquire(lock.WithLabel(ctx, bad))
		require.ErrorIs(t, err, conn.ErrInvalidArgument)
		assert.Nil(t, l)
		assert.ErrorContains(t, err, says, "the error says what is wrong with the label")
		if !s.cfg.noTry {
			l, ok, err := lk.TryAcquire(lock.WithLabel(ctx, bad))
			assert.ErrorIs(t, err, conn.ErrInvalidArgument)
			assert.ErrorContains(t, err, says)
			assert.False(t, ok)
			assert.Nil(t, l)
		}
	}
	assert.Empty(t, ephemeralsOrFail(t, sess, path), "nothing created for a refused label")

	label := strings.Repeat("é", maxLabel/2) // the bound is in bytes: 256
	l, err := lk.Acquire(lock.WithLabel(ctx, label))
	require.NoError(t, err)
	ep, err := connlink.Of(sess).Epoch(ctx)
	require.NoError(t, err)
	data, _, err := connlink.Of(ep).Get(ctx, l.Path())
	require.NoError(t, err)
	d, ok := locknode.DecodeData(data)
	require.True(t, ok, "node data %q", data)
	assert.Equal(t, label, d.Label, "the label in the node's data")
	mustRelease(t, lk, 10*time.Second)
}
