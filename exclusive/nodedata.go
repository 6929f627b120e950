package exclusive

import (
	"github.com/zkrecipes/zkrecipes/internal/locknode"
)

// nodeData is the lock node's data: host, pid and the Acquire call's
// unique id, by which a create of unknown fate recognises its node.
func nodeData(id, label string) []byte { return locknode.EncodeData(id, "", true, label) }

// hasID reports whether node data was written by the Acquire call with id.
func hasID(data []byte, id string) bool {
	d, _ := locknode.DecodeData(data)
	return d.ID == id
}

// newID returns a new unique acquire id.
func newID() string { return locknode.NewID() }
