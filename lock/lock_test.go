package lock_test

import (
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/multilock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// Every lock the Locker doc lists is a Locker, and multilock's Locker is
// this one.
var (
	_ lock.Locker      = (*exclusive.Lock)(nil)
	_ lock.Locker      = (*mutex.InterProcessMutex)(nil)
	_ lock.Locker      = (*semaphoremutex.Mutex)(nil)
	_ lock.Locker      = (*rwlock.Lock)(nil)
	_ multilock.Locker = lock.Locker(nil)
)

// "Each recipe's own sentinel of the same name is the very same value, so
// errors.Is works with either": the recipes' sentinels are lock's, and
// leader's ErrNotLeader matches lock.ErrNotHeld.
func TestRecipesShareTheSentinels(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want error
	}{
		{"mutex.ErrNotHeld", mutex.ErrNotHeld, lock.ErrNotHeld},
		{"mutex.ErrNotOwner", mutex.ErrNotOwner, lock.ErrNotOwner},
		{"mutex.ErrReleasePending", mutex.ErrReleasePending, lock.ErrReleasePending},
		{"rwlock.ErrNotHeld", rwlock.ErrNotHeld, lock.ErrNotHeld},
		{"rwlock.ErrNotOwner", rwlock.ErrNotOwner, lock.ErrNotOwner},
		{"rwlock.ErrReleasePending", rwlock.ErrReleasePending, lock.ErrReleasePending},
		{"semaphoremutex.ErrNotHeld", semaphoremutex.ErrNotHeld, lock.ErrNotHeld},
		{"semaphoremutex.ErrReleasePending", semaphoremutex.ErrReleasePending, lock.ErrReleasePending},
		{"exclusive.ErrNotHeld", exclusive.ErrNotHeld, lock.ErrNotHeld},
		{"exclusive.ErrReleasePending", exclusive.ErrReleasePending, lock.ErrReleasePending},
		{"multilock.ErrNotHeld", multilock.ErrNotHeld, lock.ErrNotHeld},
		{"leader.ErrReleasePending", leader.ErrReleasePending, lock.ErrReleasePending},
	} {
		if tc.got != tc.want {
			t.Errorf("%s is not the same value as lock's (%q, %q)", tc.name, tc.got, tc.want)
		}
	}
	if !errors.Is(leader.ErrNotLeader, lock.ErrNotHeld) {
		t.Errorf("leader.ErrNotLeader does not match lock.ErrNotHeld")
	}
}
