package exclusive

import (
	"github.com/zkrecipes/zkrecipes/internal/queue"
)

// nodeData is what the lock node says about its holder: the engine's
// NodeData (host, pid and the unique id of the Acquire call that created
// it) as JSON. The id lets an Acquire whose create had an unknown fate
// recognise its own node; the host and pid are for people reading the
// tree.
func nodeData(id, label string) []byte { return queue.EncodeData(id, "", true, label) }

// hasID reports whether node data was written by the Acquire call with id.
func hasID(data []byte, id string) bool {
	d, _ := queue.DecodeData(data)
	return d.ID == id
}

// newID returns a new unique acquire id.
func newID() string { return queue.NewID() }
