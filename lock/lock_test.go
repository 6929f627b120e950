package lock_test

import (
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/lock"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphoremutex"
)

// Every lock the Locker doc lists is a Locker.
var (
	_ lock.Locker = (*exclusive.Lock)(nil)
	_ lock.Locker = (*mutex.InterProcessMutex)(nil)
	_ lock.Locker = (*semaphoremutex.Mutex)(nil)
	_ lock.Locker = (*rwlock.Lock)(nil)
)
