package rwlock

import (
	"errors"
)

// Errors returned by this package, compared with errors.Is.
var (
	// ErrUpgrade: the write lock was asked for while holding only the read
	// lock. Two readers doing it would deadlock; nothing changed.
	ErrUpgrade = errors.New("rwlock: upgrade from the read lock to the write lock is not supported (release the read lock first)")
)
