package recipes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/locktest"
	"github.com/zkrecipes/zkrecipes/lock"
)

// TestErrorMessages pins the text of the errors a user meets most: a
// cancelled Acquire, a release whose delete was cut short (release
// pending) and a Release of a lock not held. Each layer says what it adds
// once: the recipe, the lock path, then the cause.
func TestErrorMessages(t *testing.T) {
	c := newZK(t)
	const pending = "lock: release pending (the node may still exist; deleting it in the background)"
	for _, tc := range []struct {
		rec                                string
		notHeld, cancelled, releasePending string // {P}: the lock's path, {N}: the released node's
	}{
		{"mutex", "mutex: release {P}: lock: not held",
			"mutex: acquire {P}: context deadline exceeded",
			"mutex: release {P}: " + pending + ": conn: multi set-data {N} +1 op: context canceled"},
		{"rwlock-write", "rwlock: release write lock {P}: lock: not held",
			"rwlock: acquire write lock {P}: context deadline exceeded",
			"rwlock: release write lock {P}: " + pending + ": conn: multi set-data {N} +1 op: context canceled"},
		{"semmutex", "semaphoremutex: release {P}: lock: not held",
			"semaphoremutex: acquire {P}: context deadline exceeded",
			"semaphoremutex: release {P}: " + pending + ": conn: multi set-data {N} +1 op: context canceled"},
		{"exclusive", "exclusive: release {P}: lock: not held",
			"exclusive: acquire {P}: context deadline exceeded",
			"exclusive: release {P}: " + pending + ": conn: get {N}: context canceled"}, // Release reads its node first
	} {
		t.Run(tc.rec, func(t *testing.T) {
			var rec exclusiveRecipe
			for _, r := range exclusiveRecipes() {
				if r.name == tc.rec {
					rec = r
				}
			}
			require.NotNil(t, rec.open, tc.rec)
			ctx := locktest.Ctx(t, 60*time.Second)
			path := locktest.UniquePath(c, "errmsg-"+rec.name)
			s := dial(t, c.Servers())
			holder, err := rec.open(s, path, false)
			require.NoError(t, err)
			waiter, err := rec.open(dial(t, c.Servers()), path, false)
			require.NoError(t, err)
			msg := func(format, node string) string {
				return strings.NewReplacer("{P}", path, "{N}", node).Replace(format)
			}

			err = holder.Release(ctx)
			assert.EqualError(t, err, msg(tc.notHeld, ""))
			assert.ErrorIs(t, err, lock.ErrNotHeld)

			l, err := holder.Acquire(ctx)
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = waiter.Acquire(wctx)
			cancel()
			assert.EqualError(t, err, msg(tc.cancelled, ""))
			assert.ErrorIs(t, err, context.DeadlineExceeded)

			cctx, cancel := context.WithCancel(ctx)
			cancel()
			err = holder.Release(cctx)
			assert.EqualError(t, err, msg(tc.releasePending, l.Path()))
			assert.ErrorIs(t, err, lock.ErrReleasePending)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, 1, strings.Count(err.Error(), "release pending"), "said once")
		})
	}
}
