package queue

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors of this package; the session's and ctx's are returned as they are.
var (
	// ErrReleasePending: our node's delete has an unknown outcome; a
	// goroutine deletes it until gone or the epoch ends.
	ErrReleasePending = lock.ErrReleasePending

	// ErrCreatePending: a create's answer and the search for its node were
	// lost; a goroutine goes on (Unresolved).
	ErrCreatePending = lock.ErrCreatePending

	// ErrBadRecipe: a bug in the recipe's Schema or Predicate.
	ErrBadRecipe = errors.New("queue: recipe bug")
)

// errRestart: the epoch ended under an attempt, taking our node; start over
// in the next. Never returned to callers.
var errRestart = errors.New("queue: epoch ended; restart")
