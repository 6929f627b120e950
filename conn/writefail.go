package conn

import "net"

// writeFailConn is a TCP connection of a zk.Conn on which a failed write
// closes the connection and is reported as written: go-zookeeper learns of
// the failure from its reader instead, which then fails at once.
//
// # go-zookeeper's stuck loop on a failed write
//
// go-zookeeper v1.0.4 (sendData) hands a write error to the request's
// response channel and also keeps the request pending, so the request is
// answered twice: once by the write error and again when the disconnect
// flushes the pending requests (flushRequests), which sends to that channel
// with go-zookeeper's request lock held. After a reconnect it re-sends the
// credentials it was given (every Session adds its own identity) on
// channels of capacity 1 that nobody reads once the write failed: the
// flush then blocks forever. The zk.Conn never reconnects (the epoch is lost
// to the local timer) and its goroutines never end. Under load a reset
// right after a handshake, while the credentials are written, is enough
// (TestCredentialsResendWriteFailureKeepsSession reproduces it). With no
// write error reported, a written request gets one answer from the wire
// or from the flush, never both (plus, for requests made through its
// public calls, whose channels hold 2, the one go-zookeeper gives a
// request queued as Close begins), so no channel overflows; callers see
// zk.ErrConnectionClosed, a connection loss, as for any dropped connection.
type writeFailConn struct{ net.Conn }

func (c writeFailConn) Write(p []byte) (int, error) {
	if _, err := c.Conn.Write(p); err != nil {
		c.Conn.Close() // go-zookeeper's reader fails on its next read
	}
	return len(p), nil
}
