package conn

import (
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/metrics"
)

var opNames = []string{metrics.OpCreate, metrics.OpDelete, metrics.OpGet, metrics.OpGetW, metrics.OpChildren, metrics.OpExists,
	metrics.OpSet, metrics.OpMulti, metrics.OpSync, metrics.OpAuth, metrics.OpGetACL, metrics.OpSetACL}

// counters are the live counts behind Stats; the map is read-only once built.
type counters struct {
	requests    map[string]*atomic.Int64
	watchEvents atomic.Int64
	watchesSet  atomic.Int64
	quorumSyncs atomic.Int64
	// set-watches requests written; not in Stats, read by tests
	setWatchesSent atomic.Int64
	// removeWatches requests written (watches.go); not in Stats, read by tests
	watchesRemoved atomic.Int64
	// go-zookeeper writes that were not one whole frame; read by checkWire
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

func (c *counters) snapshot() connlink.Stats {
	s := connlink.Stats{
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
