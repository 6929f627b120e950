package conn

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// hostProvider is go-zookeeper's, except that the first server tried after
// a connection that worked is dialed at once, unless the server closed that
// connection itself. go-zookeeper waits a second before each round of the
// server list, so with one address (a standalone server, a load balancer)
// every reconnect waited a second, a good part of what the quorum timer
// leaves for it. A server that closes the connection (shutting down,
// refusing us, or handing our session to another connection) is still
// given that second, and so is every later round.
type hostProvider struct {
	*zk.DNSHostProvider
	link *link

	mu    sync.Mutex
	fresh bool // connected since the last Next
}

func (h *hostProvider) Next() (server string, retryStart bool) {
	server, retryStart = h.DNSHostProvider.Next()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fresh && !h.link.closedByServer.Load() {
		retryStart = false
	}
	h.fresh = false
	return server, retryStart
}

func (h *hostProvider) Connected() {
	h.DNSHostProvider.Connected()
	h.mu.Lock()
	h.fresh = true
	h.mu.Unlock()
}
