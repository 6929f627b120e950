package conn

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// hostProvider is go-zookeeper's, but the first server tried after a
// working connection is dialed at once, not after go-zookeeper's pause of
// a second per round, which the quorum timer can ill spare (with one
// address, every reconnect). A server that closed the connection itself
// still gets the pause, as does every later round.
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
