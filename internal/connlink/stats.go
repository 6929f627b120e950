package connlink

// Stats is a snapshot of what a conn.Session has asked of ZooKeeper, over
// all its epochs (Session.Stats): what the module's tests and benchmarks
// measure a recipe's cost by. Every attempt counts, retries included.
type Stats struct {
	// Requests by operation (the metrics.Op* names).
	Requests map[string]int64
	// WatchEvents is the number of watch notifications the servers sent
	// (node created, deleted, data or children changed).
	WatchEvents int64
	// WatchesSet is the number of watches the servers confirmed: GetW and
	// ExistsW calls that returned without error. Unlike Requests, which
	// count a request when it is sent, this counts only once the watch is
	// in place on the server.
	WatchesSet int64
	// QuorumSyncs is the number of syncs the quorum timer sent
	// (the quorum timer, unless conn.WithLastHeardTimer: one every twelfth
	// of the session timeout while an epoch lives, and one as each epoch
	// begins). They are not in Requests, which count what callers and
	// recipes ask.
	QuorumSyncs int64
}

// TotalRequests is the sum of Requests.
func (s Stats) TotalRequests() int64 {
	var n int64
	for _, v := range s.Requests {
		n += v
	}
	return n
}

// Sub returns s minus an earlier snapshot, for measuring one stretch of work.
func (s Stats) Sub(earlier Stats) Stats {
	d := Stats{
		Requests:    make(map[string]int64, len(s.Requests)),
		WatchEvents: s.WatchEvents - earlier.WatchEvents,
		WatchesSet:  s.WatchesSet - earlier.WatchesSet,
		QuorumSyncs: s.QuorumSyncs - earlier.QuorumSyncs,
	}
	for k, v := range s.Requests {
		d.Requests[k] = v - earlier.Requests[k]
	}
	return d
}
