package queue

// DowngradeTag is the Config.Tag of a read/write lock's downgrade queue:
// a read node queued by the holder of the write lock, granted at once.
const DowngradeTag = "downgrade"

// RWStatus is what a node of a read/write lock does: waits, holds, or, for
// a write node, is kept (see RWNode.ACLVersion).
type RWStatus int

// The statuses of RWStatuses.
const (
	RWWaits RWStatus = iota
	RWHolds
	RWKept
)

// RWNode is a node of a read/write lock as RWStatuses judges it: its name
// and what its stat and data say.
type RWNode struct {
	Contender
	// Session is the session that created it (the stat's ephemeralOwner).
	Session int64
	// Tag is its data's NodeData.Tag (ours only): DowngradeTag for a
	// downgrade's read node.
	Tag string
	// ACLVersion is the stat's aversion: above 0 on a write node that the
	// write lock's release kept for a downgrade's read node (its ACL set
	// again, unchanged; no data change, which the waiter behind would take
	// as a release).
	ACLVersion int32
}

// RWStatuses says, for each node of a read/write lock in queue order, what
// it does, by the rules the recipe grants by (package rwlock; the
// zkrecipes command applies the same):
//
//   - a read node holds when no write node is before it (NoneBefore("W")),
//     or, for a downgrade's (DowngradeTag), when the first node is a write
//     node of its session: the grant stands on the write node it was
//     downgraded from, which was first then and stays first until deleted
//     (its deletion loses the read lease; a writer queued between then
//     holds, and the read node waits);
//   - a write node is kept when its ACL version is above 0 and a
//     downgrade's read node of its session follows it: the write lock was
//     released, the node stays only to keep a writer queued between the
//     two out;
//   - otherwise a write node holds when it is first (First).
func RWStatuses(ns []RWNode) []RWStatus {
	cs := make([]Contender, len(ns))
	for i, n := range ns {
		cs[i] = n.Contender
	}
	out := make([]RWStatus, len(ns))
	for i, n := range ns {
		var held bool
		switch {
		case n.Kind == "R":
			held, _ = NoneBefore("W")(cs, i)
			if !held && n.Tag == DowngradeTag {
				held = ns[0].Kind == "W" && ns[0].Session == n.Session
			}
		case n.ACLVersion > 0 && downgradeAfter(ns[i+1:], n.Session):
			out[i] = RWKept
			continue
		default:
			held, _ = First(cs, i)
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
