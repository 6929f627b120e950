// Package sessionclose ends a ZooKeeper session from a connection of its
// own: a handshake with the session's id and password attaches to it, and a
// CloseSession request closes it, deleting its ephemeral nodes. conn uses it
// for a session it gave up while the server may still keep it; zktest to
// expire a session on purpose.
package sessionclose

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// ZooKeeper wire constants of the exchange.
const (
	opCloseSession = -11 // OpCode.closeSession
	closeXid       = 1
	maxFrame       = 1 << 20
	timeoutHint    = 10000 // ms; the server clamps it to its limits
)

var (
	// ErrRefused: the server refused the session: it has expired or was
	// closed already (or the password is wrong).
	ErrRefused = errors.New("the server refused the session (already expired or closed, or wrong password)")
	// ErrTakenBack: the server closed the connection before it answered
	// the close (the session's owner reconnected and took it back).
	ErrTakenBack = errors.New("the server closed the connection")
)

// CloseConn is Close on a network connection, bounded by ctx: its deadline
// is the connection's, and its end closes the connection.
func CloseConn(ctx context.Context, c net.Conn, id int64, passwd []byte) error {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		if err := c.SetDeadline(deadline); err != nil {
			return err
		}
	}
	return Close(c, id, passwd)
}

// Close attaches to session id on c and closes it. nil: the close was
// committed. The close is written right behind the handshake, so the
// server reads it before any reconnect of the owner's is through.
func Close(c io.ReadWriter, id int64, passwd []byte) error {
	if _, err := c.Write(append(ConnectRequest(id, passwd), CloseRequest()...)); err != nil {
		return err
	}
	frame, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("read connect response: %w", err)
	}
	gotTimeout, gotSession, err := ConnectResponse(frame)
	if err != nil {
		return err
	}
	if gotTimeout <= 0 || gotSession != id {
		return ErrRefused
	}
	frame, err = readFrame(c)
	if err != nil {
		return fmt.Errorf("read close response: %w", err)
	}
	xid, code, err := replyHeader(frame)
	if err != nil {
		return err
	}
	if xid != closeXid || code != 0 {
		return fmt.Errorf("close session answered xid %d, error code %d", xid, code)
	}
	return nil
}

// ConnectRequest frames a jute ConnectRequest: protocolVersion int32,
// lastZxidSeen int64, timeOut int32, sessionId int64, passwd buffer (int32
// length and bytes), readOnly bool.
func ConnectRequest(id int64, passwd []byte) []byte {
	b := make([]byte, 4, 4+4+8+4+8+4+len(passwd)+1)
	b = binary.BigEndian.AppendUint32(b, 0)                   // protocolVersion
	b = binary.BigEndian.AppendUint64(b, 0)                   // lastZxidSeen
	b = binary.BigEndian.AppendUint32(b, uint32(timeoutHint)) // timeOut
	b = binary.BigEndian.AppendUint64(b, uint64(id))          // sessionId
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd))) // passwd
	b = append(b, passwd...)
	b = append(b, 0) // readOnly = false
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// CloseRequest frames a RequestHeader {xid int32, type int32} of a
// CloseSession request, which has no body.
func CloseRequest() []byte {
	xid, op := int32(closeXid), int32(opCloseSession)
	b := binary.BigEndian.AppendUint32(nil, 8)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return binary.BigEndian.AppendUint32(b, uint32(op))
}

// ConnectResponse reads timeOut and sessionId from a ConnectResponse body:
// protocolVersion int32, timeOut int32, sessionId int64, passwd buffer.
func ConnectResponse(b []byte) (timeout int32, id int64, err error) {
	if len(b) < 16 {
		return 0, 0, fmt.Errorf("short connect response (%d bytes)", len(b))
	}
	return int32(binary.BigEndian.Uint32(b[4:8])), int64(binary.BigEndian.Uint64(b[8:16])), nil
}

// replyHeader reads a ReplyHeader: xid int32, zxid int64, err int32.
func replyHeader(b []byte) (xid, code int32, err error) {
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
			return nil, ErrTakenBack
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
