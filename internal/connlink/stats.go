package connlink

// Stats is a snapshot of what a conn.Session has asked of ZooKeeper over
// all its epochs, retries included: what tests and benchmarks measure.
type Stats struct {
	// Requests by operation (the metrics.Op* names).
	Requests map[string]int64
	// WatchEvents counts the watch notifications the servers sent.
	WatchEvents int64
	// WatchesSet counts the GetW and ExistsW calls that set a watch.
	WatchesSet int64
	// QuorumSyncs counts the quorum timer's syncs, which are not in
	// Requests.
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
