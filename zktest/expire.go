package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/sessionclose"
)

const expireTimeout = 10 * time.Second // without a deadline in ctx

// ExpireEpoch makes the server end ep's ZooKeeper session, as if it had
// expired (see ExpireSession, which it calls with ep's session id and
// password): ep ends with conn.ErrSessionExpired, the Session's lock
// holders see Lost, and the Session opens a new epoch. server is any server
// of the ensemble. An epoch that has already ended fails with ErrExpire.
func ExpireEpoch(ctx context.Context, server string, ep *conn.Epoch) error {
	return ExpireSession(ctx, server, ep.SessionID(), connlink.Of(ep).SessionPassword())
}

// ExpireSession makes the server end the session sessionID, as if it had
// expired: it attaches to the session with a raw ZooKeeper handshake
// (sessionID and passwd) on server (any server of the ensemble) and sends a
// CloseSession request. When ExpireSession returns nil the close has been
// committed: the session's ephemeral nodes are gone, its watches are removed,
// and the owner's next request or reconnect learns that the session expired.
//
// The owner's connection is dropped by the server when ExpireSession
// attaches. If the session is unknown (already expired or closed) or the
// password is wrong, the error wraps ErrExpire. For a conn.Session, use
// ExpireEpoch; ExpireSession serves raw go-zookeeper clients (the password is
// what the server sent in its connect response). Without a deadline in ctx
// the exchange is limited to 10 s.
func ExpireSession(ctx context.Context, server string, sessionID int64, passwd []byte) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, expireTimeout)
		defer cancel()
	}
	// The owner may reconnect at once and take its session back, and the
	// server then closes this connection: try again. The close is sent
	// right behind the handshake, so the server reads it before any
	// reconnect of the owner's is through.
	for tried := false; ; tried = true {
		err := expireOnce(ctx, server, sessionID, passwd)
		switch {
		case errors.Is(err, errTakenBack) && ctx.Err() == nil:
			continue
		case errors.Is(err, errRefused) && tried:
			return nil // an earlier attempt's close went through
		case err != nil:
			return fmt.Errorf("zktest: expire session 0x%x on %s: %w", sessionID, server, ctxErr(ctx, err))
		}
		return nil
	}
}

// errTakenBack: the server closed the connection before the close was
// answered (the owner reconnected); errRefused: the server refused the
// session. Both match ErrExpire.
var (
	errTakenBack = fmt.Errorf("%w: %w", ErrExpire, sessionclose.ErrTakenBack)
	errRefused   = fmt.Errorf("%w: %w", ErrExpire, sessionclose.ErrRefused)
)

func expireOnce(ctx context.Context, server string, sessionID int64, passwd []byte) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return err
	}
	defer conn.Close()
	return expire(ctx, conn, sessionID, passwd)
}

func expire(ctx context.Context, conn net.Conn, sessionID int64, passwd []byte) error {
	switch err := sessionclose.CloseConn(ctx, conn, sessionID, passwd); {
	case errors.Is(err, sessionclose.ErrTakenBack):
		return errTakenBack
	case errors.Is(err, sessionclose.ErrRefused):
		return errRefused
	default:
		return err
	}
}
