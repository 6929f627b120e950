package conn

import (
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// hostProvider is go-zookeeper's with two changes. No pause before the
// first server tried after a working connection (the quorum timer cannot
// spare go-zookeeper's second), unless the server closed it. And while no
// session is open yet, a pause of 100–300 ms between rounds of the server
// list instead of the second: a new session during an election would pay
// it on every round (with a session, the round's end also fails the
// requests queued meanwhile, which go-zookeeper does only with its pause).
type hostProvider struct {
	*zk.DNSHostProvider
	link *link

	mu    sync.Mutex
	fresh bool // connected since the last Next
}

func (h *hostProvider) Next() (server string, retryStart bool) {
	server, retryStart = h.nextHeard()
	h.mu.Lock()
	fresh := h.fresh
	h.fresh = false
	h.mu.Unlock()
	switch {
	case !retryStart || h.link.retired.Load(): // retired: go-zookeeper's pause ends at once as its Conn closes
	case fresh && !h.link.closedByServer.Load():
		retryStart = false
	case h.link.hs.Load().sessionID == 0:
		time.Sleep(roundPause/2 + mrand.N(roundPause))
		retryStart = false
	}
	return server, retryStart
}

func (h *hostProvider) Connected() {
	h.DNSHostProvider.Connected()
	h.mu.Lock()
	h.fresh = true
	h.mu.Unlock()
}

const roundPause = 200 * time.Millisecond

// nextHeard is the next server not found silent lately (see silentSet),
// or, if all were, the one found silent longest ago.
func (h *hostProvider) nextHeard() (server string, retryStart bool) {
	var oldest time.Time
	for range h.Len() {
		srv, wrapped := h.DNSHostProvider.Next()
		retryStart = retryStart || wrapped
		at, silent := h.link.silent.since(srv)
		if !silent {
			return srv, retryStart
		}
		if server == "" || at.Before(oldest) {
			server, oldest = srv, at
		}
	}
	return server, retryStart
}

// silentSet is the servers a Session found silent lately (a connection
// left, a connect request cut), shared by its connections: a new one does
// not start with a frozen server while another answers, and a connect
// request waiting on a server found silent meanwhile is cut at once.
type silentSet struct {
	mu      sync.Mutex
	keep    time.Duration          // how long a server stays in the set
	at      map[string]time.Time   // when each was found silent
	waiting map[*wireConn]struct{} // connections whose connect request is unanswered
}

func newSilentSet(keep time.Duration) *silentSet {
	return &silentSet{keep: keep, at: make(map[string]time.Time), waiting: make(map[*wireConn]struct{})}
}

// add records server as silent and cuts the connect requests waiting on it.
func (s *silentSet) add(server string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[server] = time.Now()
	for w := range s.waiting {
		if w.addr == server {
			delete(s.waiting, w)
			w.Conn.Close() // go-zookeeper's reader fails and moves on
		}
	}
}

// since is when server was found silent, if lately.
func (s *silentSet) since(server string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.at[server]
	if ok && time.Since(at) > s.keep {
		delete(s.at, server)
		return time.Time{}, false
	}
	return at, ok
}

// heard: server answered, if only by closing the connection.
func (s *silentSet) heard(server string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, server)
}

// wait and done bracket w's connect request.
func (s *silentSet) wait(w *wireConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting[w] = struct{}{}
}

func (s *silentSet) done(w *wireConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, w)
}
