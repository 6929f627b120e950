package locknode

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/uuid"
)

// NodeData is what the engine writes into each node it creates, as JSON:
// who is queued or holds the lock.
type NodeData struct {
	ID   string `json:"id"`   // the unique acquire id (the uuid of a protected name)
	Host string `json:"host"` // os.Hostname of the process
	PID  int    `json:"pid"`  // process id
	// Tag is the queue's Config.Tag: what kind of contender queued the
	// node, for the waiter it hands over to. Empty for most recipes.
	Tag string `json:"tag,omitempty"`
	// Sealed says that the node was created sealed (only its creator may
	// change it; Queue.NodeACL), so that a change of a queue node's data
	// is its holder's release (the handover mark), and lock.Revoke refuses
	// to write into it. False on revocable nodes and on every foreign
	// client's node.
	Sealed bool `json:"sealed,omitempty"`
	// Label is the caller's label of the acquire (lock.WithLabel).
	Label string `json:"label,omitempty"`
}

// local is this process, computed once, on first use (not at start-up:
// every program that imports package lock imports this package).
var local = sync.OnceValue(func() NodeData {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return NodeData{Host: host, PID: os.Getpid()}
})

// Hostname is the host name the engine writes into node data.
func Hostname() string { return local().Host }

// NewID returns a new unique acquire id (a random UUID).
func NewID() string { return uuid.NewString() }

// EncodeData is the data the engine writes into a node (see NodeData).
func EncodeData(id, tag string, sealed bool, label string) []byte {
	d := local()
	d.ID, d.Tag, d.Sealed, d.Label = id, tag, sealed, label
	b, _ := json.Marshal(d) // cannot fail: strings and an int
	return b
}

// RevokeMark is what lock.Revoke writes into a holder's node to ask it to
// release: Curator's LockInternals.REVOKE_MESSAGE.
const RevokeMark = "__REVOKE__"

// IsRevokeMark reports whether b is the revoke mark. It replaces the
// node's data, so it says nothing of who holds the node.
func IsRevokeMark(b []byte) bool { return string(b) == RevokeMark }

// DecodeData reads node data written by the engine. Anything else is
// described as well as it can be: Curator writes the client's IP address as
// text by default, which becomes Host. ok is false for data that says
// nothing useful: the revoke mark is not an owner.
func DecodeData(b []byte) (d NodeData, ok bool) {
	if len(b) == 0 || IsRevokeMark(b) {
		return NodeData{}, false
	}
	if json.Unmarshal(b, &d) == nil {
		return d, d.ID != "" || d.Host != ""
	}
	s := strings.TrimSpace(string(b))
	if s == "" || len(s) > 255 || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return NodeData{}, false
	}
	return NodeData{Host: s}, true
}

// Revocable reports whether name is the name of a node a revoke request
// may go to: a contender of a mutex or of a semaphore's internal lock, a
// semaphore's lease (ProtectedSchema "lock" and "lease", Curator's,
// go-zookeeper's and kazoo's names included), or a reader or writer of a
// read/write lock (HostKindSchema). An election's node, whose data is its
// participant id, is not one.
func Revocable(name string) bool {
	return parses(name, ProtectedSchema{Name: "lock"}, ProtectedSchema{Name: "lease"}, HostKindSchema{})
}

// Recipe reports whether name is the name of any recipe's node: a
// Revocable one or an election's. A write into one can hand it on.
func Recipe(name string) bool {
	return Revocable(name) || parses(name, ProtectedSchema{Name: "latch"})
}

func parses(name string, schemas ...Schema) bool {
	for _, s := range schemas {
		if _, ok := s.Parse(name); ok {
			return true
		}
	}
	return false
}
