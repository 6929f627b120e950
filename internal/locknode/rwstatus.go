package locknode

import "slices"

// DowngradeTag is the Config.Tag of a read/write lock's downgrade queue.
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
	Session    int64  // the stat's ephemeralOwner
	Tag        string // its data's NodeData.Tag (ours only)
	ACLVersion int32  // above 0 on a write node kept for a downgrade (rwlock's markKept)
}

// RWStatuses says what each node of a read/write lock, in queue order,
// does: a read node holds when no write node is before it, or, for a
// downgrade's, when the first node is a write node of its session; a write
// node is kept when its ACL version is above 0 and a downgrade's read node
// of its session follows it, else holds when it is first.
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
		case n.ACLVersion > 0 && slices.ContainsFunc(ns[i+1:], func(m RWNode) bool {
			return m.Kind == "R" && m.Tag == DowngradeTag && m.Session == n.Session
		}):
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
