package conn

import "net"

// writeFailConn reports a failed write as written and closes the
// connection, so go-zookeeper learns of it from its reader. go-zookeeper
// v1.0.4 answers a failed write twice (the error, then the flush of
// pending requests), which after a reconnect's credentials re-send blocks
// its loop forever (see docs/design.md, "The wire"). Callers see
// zk.ErrConnectionClosed, a connection loss.
type writeFailConn struct{ net.Conn }

func (c writeFailConn) Write(p []byte) (int, error) {
	if _, err := c.Conn.Write(p); err != nil {
		c.Conn.Close() // go-zookeeper's reader fails on its next read
	}
	return len(p), nil
}
