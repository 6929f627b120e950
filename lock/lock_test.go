package lock_test

import (
	"github.com/zkrecipes/zkrecipes/exclusive"
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
