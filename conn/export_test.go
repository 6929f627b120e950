package conn

// SetWatchesSent is the number of set-watches requests session s has
// written: go-zookeeper re-sends its watches after each reconnect.
func SetWatchesSent(s *Session) int64 { return s.stats.setWatchesSent.Load() }

// NewLease and Released give the tests what the recipes reach through
// internal/connhook.
func (e *Epoch) NewLease(path string) *Lease { return e.newLease(path) }

// Released marks l released (see Lease.released).
func (l *Lease) Released() { l.released() }
