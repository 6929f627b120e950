package queue

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/lock"
)

// Errors returned by this package, compared with errors.Is. Errors of the
// session (conn.ErrClosed, conn.ErrConnectionLoss, ...) and of the caller's
// context are returned wrapped as they are.
var (
	// ErrReleasePending is lock.ErrReleasePending: deleting our node failed
	// in a way that leaves its fate unknown (the connection was lost or ctx
	// ended mid-request) while the session still lives. The node may still
	// exist, so the lock may still be held by us in the eyes of the other
	// contenders; a goroutine keeps deleting it until it is gone or the
	// session ends, whichever comes first.
	ErrReleasePending = lock.ErrReleasePending

	// ErrCreatePending is lock.ErrCreatePending: a write that may have
	// created a node of ours (a create, a transaction) lost its answer,
	// and the search for the node by the acquire's unique id failed too,
	// so the acquire gave up without knowing whether the node exists. It
	// is not left to the session's end: a goroutine keeps looking for it
	// and deletes it, until that is done or the session's epoch ends (see
	// Unresolved).
	ErrCreatePending = lock.ErrCreatePending

	// ErrBadRecipe: the recipe's Schema does not recognise the names it
	// makes, or its Predicate named a node to watch that is not a contender
	// before ours. A bug in the recipe, never a runtime condition.
	ErrBadRecipe = errors.New("queue: recipe bug")
)

// errRestart: the epoch ended under an attempt; our node went (or goes)
// with its session. Start over in the next epoch. Never returned to callers.
var errRestart = errors.New("queue: epoch ended; restart")
