package conn

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Errors returned by this package, wrapped with the operation and path that
// failed. Compare with errors.Is.
var (
	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("conn: session closed")

	// ErrEpochEnded: the request's epoch ended; the error also matches
	// the reason (ErrSessionExpired, ErrSessionTimeout or ErrClosed).
	ErrEpochEnded = errors.New("conn: session epoch ended")

	// ErrSessionExpired: the server confirmed expiry; ephemeral nodes are gone.
	ErrSessionExpired = errors.New("conn: session expired (confirmed by the server)")

	// ErrSessionTimeout: the local timer ran out; the session is taken as lost.
	ErrSessionTimeout = errors.New("conn: session timed out on the client (local timer); session taken as lost")

	// ErrConnectionLoss: the connection broke while a request was in flight
	// and it could not be retried (a sequential create, a multi, or any
	// request whose epoch ended): a write may or may not have been applied
	// (a read's error says it changed nothing). A
	// retried write whose retry may have met its own lost try's work matches
	// it too: a create's zk.ErrNodeExists, a versioned set's
	// zk.ErrBadVersion, a delete's zk.ErrNoNode.
	ErrConnectionLoss = errors.New("conn: connection lost; the request may or may not have been applied")

	// ErrInvalidArgument: bad input (an option, a path, a nil session, ...),
	// from every package; nothing was done. A valid path is absolute, has no
	// trailing "/" (but the root), no empty, "." or ".." segment, no character
	// the server rejects, and is not under /zookeeper.
	ErrInvalidArgument = zkpath.ErrInvalid

	// ErrAuthFailed: a server refused the credentials (WithDigestAuth).
	ErrAuthFailed = errors.New("conn: the server refused the credentials")
)
