package queue

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrConnectionLoss, ...) and of the caller's
// context are returned wrapped as they are.
var (
	// ErrReleasePending is lock.ErrReleasePending: our node's delete has
	// an unknown outcome; a goroutine deletes it until gone or the epoch ends.
	ErrReleasePending = lock.ErrReleasePending

	// ErrCreatePending is lock.ErrCreatePending: a create's answer and the
	// search for its node were lost; a goroutine goes on (Unresolved).
	ErrCreatePending = lock.ErrCreatePending

	// ErrBadRecipe: the recipe's Schema does not recognise the names it
	// makes, or its Predicate named a node to watch that is not a contender
	// before ours. A bug in the recipe, never a runtime condition.
	ErrBadRecipe = errors.New("queue: recipe bug")
)

// errRestart: the epoch ended under an attempt; our node went (or goes)
// with its session. Start over in the next epoch. Never returned to callers.
var errRestart = errors.New("queue: epoch ended; restart")
