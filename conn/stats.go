package conn

import (
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/metrics"
)

var opNames = []string{metrics.OpCreate, metrics.OpDelete, metrics.OpGet, metrics.OpGetW, metrics.OpChildren, metrics.OpExists,
	metrics.OpSet, metrics.OpMulti, metrics.OpSync, metrics.OpAuth, metrics.OpGetACL, metrics.OpSetACL}

// Stats is a snapshot of what a Session has asked of ZooKeeper, over all its
// epochs. Every attempt counts, retries included.
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
	// (the quorum timer, unless WithLastHeardTimer: one every twelfth of the session timeout while an
	// epoch lives, and one as each epoch begins). They are not in Requests, which count what callers
	// and recipes ask.
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

// counters are the live counts behind Stats. The map is filled once at
// construction and only read after, so it needs no lock.
type counters struct {
	requests    map[string]*atomic.Int64
	watchEvents atomic.Int64
	watchesSet  atomic.Int64
	quorumSyncs atomic.Int64
	// set-watches requests written (go-zookeeper re-sending watches after
	// a reconnect); not in Stats, read by tests
	setWatchesSent atomic.Int64
	// removeWatches requests written (watches.go); not in Stats, read by tests
	watchesRemoved atomic.Int64
	// Writes by go-zookeeper that were not exactly one frame (wire.go);
	// read by CheckWire
	splitWrites atomic.Int64
}

func newCounters() *counters {
	c := &counters{requests: make(map[string]*atomic.Int64, len(opNames))}
	for _, op := range opNames {
		c.requests[op] = new(atomic.Int64)
	}
	return c
}

func (c *counters) count(op string) { c.requests[op].Add(1) }

func (c *counters) snapshot() Stats {
	s := Stats{
		Requests:    make(map[string]int64, len(c.requests)),
		WatchEvents: c.watchEvents.Load(),
		WatchesSet:  c.watchesSet.Load(),
		QuorumSyncs: c.quorumSyncs.Load(),
	}
	for k, v := range c.requests {
		s.Requests[k] = v.Load()
	}
	return s
}
