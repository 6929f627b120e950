package rwlock_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testzk"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// BenchmarkWriteContended10 is 10 sessions taking turns on the write lock
// with an empty critical section; an op is one acquisition (and its
// release).
func BenchmarkWriteContended10(b *testing.B) {
	contended(b, 10, func(rw *rwlock.RWLock) *rwlock.Lock { return rw.WriteLock() })
}

// BenchmarkReadContended10 is 10 sessions taking the read lock over and
// over on one path; they share it, so nobody waits: an op costs a create, a
// listing and a delete.
func BenchmarkReadContended10(b *testing.B) {
	contended(b, 10, func(rw *rwlock.RWLock) *rwlock.Lock { return rw.ReadLock() })
}

func contended(b *testing.B, n int, side func(*rwlock.RWLock) *rwlock.Lock) {
	c := testzk.Shared(b)
	path := testzk.Path(b, c, "lock")
	sessions := testzk.ConnectN(b, c.Servers(), n)
	locks := make([]testzk.Locker, n)
	for i, s := range sessions {
		locks[i] = side(newRW(b, s, path))
	}
	testzk.BenchContended(b, sessions, locks)
}
