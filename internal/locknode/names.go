package locknode

import "strings"

// Contender is one child of the lock path that a Schema recognised as a
// node in the queue.
type Contender struct {
	// Name is the child's name (not its path).
	Name string
	// Seq is the sequence number the server appended, as a signed 32-bit
	// integer: the server's counter wraps to negative numbers.
	Seq int32
	// Kind is the schema's tag for the node ("R" or "W" for HostKindSchema;
	// "" for ProtectedSchema). Predicates read it.
	Kind string
	// ID is the unique acquire id carried in the name, or "" when the
	// schema keeps it in the node's data only.
	ID string
}

// Schema names the nodes of one recipe and recognises its contenders.
// Implementations must be safe for concurrent use (values with no mutable
// state are).
type Schema interface {
	// Prefix is the name our node is created with, before the sequence
	// number the server appends. id is the unique acquire id; if the prefix
	// contains id, the engine finds a node whose create response was lost
	// by its name alone, otherwise it reads the data of the children that
	// start with the prefix.
	Prefix(id string) string
	// Parse recognises a child name as a contender. Names it does not
	// recognise are ignored by the engine, never an error.
	Parse(name string) (Contender, bool)
}

// SplitSeq splits a sequential node name into the part before the sequence
// number (separator included) and the number, parsed from the right: the
// trailing run of digits, with a '-' sign in front of it when that '-'
// itself follows a separator ('-' or '_'), as in "lock--000000001" or
// "-2147483648". The number must fit in an int32. ok is false when the name
// ends in no such number.
func SplitSeq(name string) (head string, seq int32, ok bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	digits := name[i:]
	if len(digits) == 0 || len(digits) > 10 {
		return "", 0, false
	}
	neg := false
	if i >= 2 && name[i-1] == '-' && (name[i-2] == '-' || name[i-2] == '_') {
		neg = true
		i--
	}
	var v int64
	for _, c := range []byte(digits) {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	if v < -1<<31 || v > 1<<31-1 {
		return "", 0, false
	}
	return name[:i], int32(v), true
}

// ProtectedSchema is the naming of Curator's protected sequential nodes,
// which InterProcessMutex (Name "lock") and InterProcessSemaphoreV2's leases
// (Name "lease") use: "_c_<uuid>-<Name>-<seq10>". Parse also recognises, as
// contenders of the same queue, go-zookeeper's "_c_<32hex>-<Name>-<seq>" and
// kazoo's "<32hex>__<Name>__<seq>". Kind is always "".
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

// HostKindSchema is the naming of the read/write lock: "<Host>-<Kind>-<seq10>"
// with Kind "R" or "W". Host may contain '-' (names are parsed from the
// right). The acquire id is not in the name, so it must be in the node data
// (the engine's default data carries it). Parse recognises both kinds
// whatever Kind is: readers and writers share one queue.
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
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHexByte(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
