package conn

// SetWatchesSent is the number of set-watches requests session s has
// written: go-zookeeper re-sends its watches after each reconnect.
func SetWatchesSent(s *Session) int64 { return s.stats.setWatchesSent.Load() }

// WatchesRemoved is the number of removeWatches requests session s has
// written (see watches.go).
func WatchesRemoved(s *Session) int64 { return s.stats.watchesRemoved.Load() }
