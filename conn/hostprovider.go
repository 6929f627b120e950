package conn

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// hostProvider is go-zookeeper's, except that the first server tried after
// a connection that worked is dialed at once. go-zookeeper waits a second
// before each round of the server list, so with one address (a standalone
// server, a load balancer) every reconnect waited a second, a good part of
// what the quorum timer leaves for it. Later rounds still wait: a server
// that keeps refusing is not stormed.
type hostProvider struct {
	*zk.DNSHostProvider

	mu    sync.Mutex
	fresh bool // connected since the last Next
}

func (h *hostProvider) Next() (server string, retryStart bool) {
	server, retryStart = h.DNSHostProvider.Next()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fresh {
		h.fresh, retryStart = false, false
	}
	return server, retryStart
}

func (h *hostProvider) Connected() {
	h.DNSHostProvider.Connected()
	h.mu.Lock()
	h.fresh = true
	h.mu.Unlock()
}
