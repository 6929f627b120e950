package locknode

import "slices"

// DowngradeTag is the queue Config.Tag of a read/write lock's downgrade queue:
// a read node queued by the holder of the write lock, granted at once.
const DowngradeTag = "downgrade"

// RWStatus is what a node of a read/write lock does.
type RWStatus int

// The statuses of RWStatuses.
const (
	RWWaits RWStatus = iota
	RWHolds
	RWKept
)

// RWNode is a node of a read/write lock as RWStatuses judges it.
type RWNode struct {
	Contender
	// Session is the stat's ephemeralOwner.
	Session int64
	// Tag is its data's NodeData.Tag (ours only).
	Tag string
	// ACLVersion is the stat's aversion: above 0 on a write node kept for
	// a downgrade (its ACL set again: a data change would be a release).
	ACLVersion int32
}

// RWStatuses says what each node of a read/write lock, in queue order,
// does, by the rules rwlock grants by (docs/design.md, "Downgrading a
// write lock"):
//
//   - a read node holds when no write node is before it, or, for a
//     downgrade's, when the first node is a write node of its session;
//   - a write node is kept when its ACL version is above 0 and a
//     downgrade's read node of its session follows it;
//   - otherwise a write node holds when it is first.
//
// These are the engine's predicates (queue.NoneBefore("W"), queue.First)
// plus the downgrade's.
func RWStatuses(ns []RWNode) []RWStatus {
	out := make([]RWStatus, len(ns))
	for i, n := range ns {
		var held bool
		switch {
		case n.Kind == "R":
			held = !slices.ContainsFunc(ns[:i], func(m RWNode) bool { return m.Kind == "W" })
			if !held && n.Tag == DowngradeTag {
				held = ns[0].Kind == "W" && ns[0].Session == n.Session
			}
		case n.ACLVersion > 0 && downgradeAfter(ns[i+1:], n.Session):
			out[i] = RWKept
			continue
		default:
			held = i == 0
		}
		if held {
			out[i] = RWHolds
		}
	}
	return out
}

// downgradeAfter reports whether ns holds a downgrade's read node of
// session.
func downgradeAfter(ns []RWNode, session int64) bool {
	for _, n := range ns {
		if n.Kind == "R" && n.Tag == DowngradeTag && n.Session == session {
			return true
		}
	}
	return false
}
