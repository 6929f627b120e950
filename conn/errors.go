package conn

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Errors returned by this package. Compare with errors.Is; they are wrapped
// with the operation and path that failed.
var (
	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("conn: session closed")

	// ErrEpochEnded is returned by an operation bound to an epoch that has
	// ended. The error also matches the reason: ErrSessionExpired,
	// ErrSessionTimeout or ErrClosed.
	ErrEpochEnded = errors.New("conn: session epoch ended")

	// ErrSessionExpired: the server confirmed that the ZooKeeper session
	// expired; its ephemeral nodes are gone.
	ErrSessionExpired = errors.New("conn: session expired (confirmed by the server)")

	// ErrSessionTimeout: the local timer ran out (see "The local timer" in
	// the package documentation): the last sync answered through the
	// ensemble's leader was sent half the session timeout ago (the default;
	// also while connected, over a link whose round trip exceeds about a
	// third of the session timeout), or, with WithLastHeardTimer(), the
	// client was disconnected for the session timeout. The session is
	// taken as lost although the server could not confirm it.
	ErrSessionTimeout = errors.New("conn: session timed out on the client (local timer); session taken as lost")

	// ErrConnectionLoss: the connection broke while a request that is not
	// retried blindly (a sequential create, a multi) was in flight. The
	// request may or may not have been applied.
	ErrConnectionLoss = errors.New("conn: connection lost; the request may or may not have been applied")

	// ErrInvalidArgument: a bad option, path, nil value or argument (a
	// path ZooKeeper rejects or in its reserved /zookeeper tree, a nil
	// session, option or lock, no server, a label too long, ...). Every
	// package of this module returns this one value for bad input, wrapped
	// in a message that says what was wrong; nothing was done. A valid
	// path is absolute ("/" first), does not end with "/" (except the
	// root), and has no empty, "." or ".." segment and no NUL or other
	// character the server rejects.
	ErrInvalidArgument = zkpath.ErrInvalid

	// ErrConnectTimeout: no session could be established within the connect
	// timeout.
	ErrConnectTimeout = errors.New("conn: no session established within the connect timeout")

	// ErrAuthFailed: a server refused the credentials sent at the start of
	// a session (WithDigestAuth, the session's own identity). The session
	// backs off and opens another (see Connect).
	ErrAuthFailed = errors.New("conn: the server refused the credentials")
)
