package conn

import "time"

// SetWatchesSent is the number of set-watches requests session s has
// written: go-zookeeper re-sends its watches after each reconnect.
func SetWatchesSent(s *Session) int64 { return s.stats.setWatchesSent.Load() }

// WithCloseWait sets how long closing a zk.Conn waits for go-zookeeper's
// goroutines (default 10s).
func WithCloseWait(d time.Duration) Option {
	return option("conn.WithCloseWait", func(c *config) { c.closeWait = d })
}

// WatchesRemoved is the number of removeWatches requests session s has
// written (see watches.go).
func WatchesRemoved(s *Session) int64 { return s.stats.watchesRemoved.Load() }

// NewLease and Released give the tests what the recipes reach through
// internal/connlink.
func (e *Epoch) NewLease(path string) *Lease { return e.view().NewLease(path, 0) }

// Released marks l released (see Lease.released).
func (l *Lease) Released() { l.released() }

// LostSignal is e's lost signal under the session's error policy (see
// Epoch.lostSignal).
func LostSignal(e *Epoch) <-chan struct{} { return e.lostSignal() }

// GuardWith and Unguard are connlink.Lease.Guard and Unguard.
func (l *Lease) GuardWith(node string, zxid, pass int64) { (*leaseView)(l).Guard(node, zxid, pass) }

// Unguard hands a guarded grant to its own node (see leaseView.Unguard).
func (l *Lease) Unguard() { (*leaseView)(l).Unguard() }

// ServerOf is the address of the server s's live connection talks to
// ("" between connections).
func ServerOf(s *Session) string {
	s.mu.Lock()
	ep := s.cur
	s.mu.Unlock()
	if ep == nil {
		return ""
	}
	if w := ep.wire.cur.Load(); w != nil {
		return w.addr
	}
	return ""
}

// ServersLeft is how many times s left a silent server (leaveSilent).
func ServersLeft(s *Session) int64 { return s.stats.serversLeft.Load() }
