package queue

import "errors"

// ErrBadRecipe: a bug in the recipe's Schema or Predicate. Other errors
// are the session's, ctx's, or package lock's (lock.ErrReleasePending,
// lock.ErrCreatePending).
var ErrBadRecipe = errors.New("queue: recipe bug")

// errRestart: the epoch ended under an attempt, taking our node; start over
// in the next. Never returned to callers.
var errRestart = errors.New("queue: epoch ended; restart")
