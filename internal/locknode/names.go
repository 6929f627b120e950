// Package locknode is what the nodes of this module's locks are: their
// names (Schema) and queue order (Parse, Before), their data (NodeData,
// Label, the revoke mark), and which read/write lock nodes hold
// (RWStatuses).
package locknode

import (
	"slices"
	"strconv"
	"strings"
)

// Contender is one child of the lock path that a Schema recognised as a
// node in the queue.
type Contender struct {
	Name string // the child's name (not its path)
	Seq  int32  // the server's sequence number, which wraps to negative numbers
	Kind string // the schema's tag: "R" or "W" for HostKindSchema, else ""
	ID   string // the unique acquire id in the name, or "" when only the data has it
}

// Schema names the nodes of one recipe and recognises its contenders.
// Implementations must be safe for concurrent use.
type Schema interface {
	// Prefix is the name our node is created with, before the sequence
	// number; if it contains id, a node whose create answer was lost is
	// found by its name, else by its data.
	Prefix(id string) string
	// Parse recognises a child name as a contender (others are ignored).
	Parse(name string) (Contender, bool)
}

// SplitSeq splits a sequential node name into the part before the sequence
// number and the number, parsed from the right: the trailing digits, with
// a '-' sign in front when that '-' follows a separator ('-' or '_'), as
// in "lock--000000001". ok is false when the name ends in no such int32.
func SplitSeq(name string) (head string, seq int32, ok bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if n := len(name) - i; n == 0 || n > 10 {
		return "", 0, false
	}
	if i >= 2 && name[i-1] == '-' && (name[i-2] == '-' || name[i-2] == '_') {
		i--
	}
	v, err := strconv.ParseInt(name[i:], 10, 32)
	if err != nil {
		return "", 0, false
	}
	return name[:i], int32(v), true
}

// ProtectedSchema is the naming of Curator's protected sequential nodes
// (InterProcessMutex's Name "lock", InterProcessSemaphoreV2's "lease"):
// "_c_<uuid>-<Name>-<seq10>". Parse also recognises go-zookeeper's
// "_c_<32hex>-<Name>-<seq>" and kazoo's "<32hex>__<Name>__<seq>".
type ProtectedSchema struct {
	Name string // "lock" for a mutex
}

// Prefix implements Schema: "_c_<id>-<Name>-".
func (s ProtectedSchema) Prefix(id string) string { return "_c_" + id + "-" + s.Name + "-" }

// Parse implements Schema.
func (s ProtectedSchema) Parse(name string) (Contender, bool) {
	head, seq, ok := SplitSeq(name)
	if !ok {
		return Contender{}, false
	}
	if id, ok := strings.CutSuffix(head, "__"+s.Name+"__"); ok && isHex(id, 32) { // kazoo
		return Contender{Name: name, Seq: seq, ID: id}, true
	}
	rest, ok := strings.CutPrefix(head, "_c_")
	if !ok {
		return Contender{}, false
	}
	id, ok := strings.CutSuffix(rest, "-"+s.Name+"-")
	if !ok || !(isUUID(id) || isHex(id, 32)) { // Curator, go-zookeeper
		return Contender{}, false
	}
	return Contender{Name: name, Seq: seq, ID: id}, true
}

// HostKindSchema is the naming of the read/write lock, "<Host>-<Kind>-<seq10>",
// parsed from the right (Host may contain '-'); the id is in the data.
type HostKindSchema struct {
	Host string // who we are; any name segment ZooKeeper accepts
	Kind string // "R" or "W": the kind of node this queue creates
}

// Prefix implements Schema: "<Host>-<Kind>-".
func (s HostKindSchema) Prefix(string) string { return s.Host + "-" + s.Kind + "-" }

// Parse implements Schema.
func (s HostKindSchema) Parse(name string) (Contender, bool) {
	head, seq, ok := SplitSeq(name)
	if !ok || len(head) < 4 || head[len(head)-1] != '-' || head[len(head)-3] != '-' {
		return Contender{}, false
	}
	kind := head[len(head)-2 : len(head)-1]
	if kind != "R" && kind != "W" {
		return Contender{}, false
	}
	return Contender{Name: name, Seq: seq, Kind: kind}, true
}

// isUUID reports whether s is a UUID in its 8-4-4-4-12 text form.
func isUUID(s string) bool {
	return len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' &&
		isHex(s[:8]+s[9:13]+s[14:18]+s[19:23]+s[24:], 32)
}

func isHex(s string, n int) bool {
	return len(s) == n && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
	})
}

// Before reports whether sequence number a comes before b: the server's
// 32-bit counter wraps, so they compare as serial numbers (RFC 1982).
func Before(a, b int32) bool { return int32(uint32(b)-uint32(a)) > 0 }

// Parse returns the children that schema recognises, in queue order.
func Parse(schema Schema, names []string) []Contender {
	cs := make([]Contender, 0, len(names))
	for _, n := range names {
		if c, ok := schema.Parse(n); ok {
			cs = append(cs, c)
		}
	}
	Sort(cs)
	return cs
}

// Sort sorts contenders in queue order.
func Sort(cs []Contender) { slices.SortStableFunc(cs, Compare) }

// Compare is queue order: by sequence number (Before), then by name.
func Compare(a, b Contender) int {
	switch {
	case a.Seq == b.Seq:
		return strings.Compare(a.Name, b.Name)
	case Before(a.Seq, b.Seq):
		return -1
	}
	return 1
}

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
	ACLVersion int32  // above 0 on a write node kept for a downgrade (its ACL set again)
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
