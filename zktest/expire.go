package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
)

// ZooKeeper wire constants used by ExpireSession.
const (
	opCloseSession     = -11 // OpCode.closeSession
	closeXid           = 1
	expireTimeout      = 10 * time.Second // without a deadline in ctx
	maxFrame           = 1 << 20
	connectTimeoutHint = 10000 // ms; the server clamps it to its limits
)

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
	errTakenBack = fmt.Errorf("%w: the server closed the connection", ErrExpire)
	errRefused   = fmt.Errorf("%w: the server refused the session (already expired or closed, or wrong password)", ErrExpire)
)

func expireOnce(ctx context.Context, server string, sessionID int64, passwd []byte) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	return expire(conn, sessionID, passwd)
}

func expire(conn io.ReadWriter, sessionID int64, passwd []byte) error {
	if _, err := conn.Write(append(encodeConnectRequest(sessionID, passwd), encodeCloseRequest()...)); err != nil {
		return err
	}
	frame, err := readFrame(conn)
	if err != nil {
		return fmt.Errorf("read connect response: %w", err)
	}
	gotTimeout, gotSession, err := decodeConnectResponse(frame)
	if err != nil {
		return err
	}
	if gotTimeout <= 0 || gotSession != sessionID {
		return errRefused
	}
	frame, err = readFrame(conn)
	if err != nil {
		return fmt.Errorf("read close response: %w", err)
	}
	xid, code, err := decodeReplyHeader(frame)
	if err != nil {
		return err
	}
	if xid != closeXid || code != 0 {
		return fmt.Errorf("%w: close session answered xid %d, error code %d", ErrExpire, xid, code)
	}
	return nil
}

// encodeConnectRequest frames a jute ConnectRequest: protocolVersion int32,
// lastZxidSeen int64, timeOut int32, sessionId int64, passwd buffer (int32
// length and bytes), readOnly bool.
func encodeConnectRequest(sessionID int64, passwd []byte) []byte {
	b := make([]byte, 4, 4+4+8+4+8+4+len(passwd)+1)
	b = binary.BigEndian.AppendUint32(b, 0)                          // protocolVersion
	b = binary.BigEndian.AppendUint64(b, 0)                          // lastZxidSeen
	b = binary.BigEndian.AppendUint32(b, uint32(connectTimeoutHint)) // timeOut
	b = binary.BigEndian.AppendUint64(b, uint64(sessionID))          // sessionId
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))        // passwd
	b = append(b, passwd...)
	b = append(b, 0) // readOnly = false
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// encodeCloseRequest frames a RequestHeader {xid int32, type int32} of a
// CloseSession request, which has no body.
func encodeCloseRequest() []byte {
	xid, op := int32(closeXid), int32(opCloseSession)
	b := binary.BigEndian.AppendUint32(nil, 8)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return binary.BigEndian.AppendUint32(b, uint32(op))
}

// decodeConnectResponse reads timeOut and sessionId from a ConnectResponse
// body: protocolVersion int32, timeOut int32, sessionId int64, passwd buffer.
func decodeConnectResponse(b []byte) (timeout int32, sessionID int64, err error) {
	if len(b) < 16 {
		return 0, 0, fmt.Errorf("short connect response (%d bytes)", len(b))
	}
	return int32(binary.BigEndian.Uint32(b[4:8])), int64(binary.BigEndian.Uint64(b[8:16])), nil
}

// decodeReplyHeader reads a ReplyHeader: xid int32, zxid int64, err int32.
func decodeReplyHeader(b []byte) (xid, code int32, err error) {
	if len(b) < 16 {
		return 0, 0, fmt.Errorf("short reply header (%d bytes)", len(b))
	}
	return int32(binary.BigEndian.Uint32(b[0:4])), int32(binary.BigEndian.Uint32(b[12:16])), nil
}

// readFrame reads one int32-length-prefixed frame.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, errTakenBack
		}
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || n > maxFrame {
		return nil, fmt.Errorf("bad frame length %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
