package semaphoremutex

import (
	"errors"
)

// errRestart: the epoch ended under an attempt, or our lease node was
// deleted by someone else; start over with the internal lock. Never
// returned to callers.
var errRestart = errors.New("semaphoremutex: start over")
