package locknode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// NodeData is what the engine writes into each node it creates, as JSON:
// who is queued or holds the lock.
type NodeData struct {
	ID   string `json:"id"`            // the unique acquire id (the uuid of a protected name)
	Host string `json:"host"`          // os.Hostname of the process
	PID  int    `json:"pid"`           // process id
	Tag  string `json:"tag,omitempty"` // the queue's Config.Tag, for the waiter it hands over to
	// Sealed: only its creator may change the node, so a change of its data
	// is its holder's release. False on revocable and foreign nodes.
	Sealed bool   `json:"sealed,omitempty"`
	Label  string `json:"label,omitempty"` // lock.WithLabel's
	// Handoff: the node may be passed between goroutines of its process
	// (lock.WithLocalHandoff) without a write, so ID and Label are those of
	// the acquire that created it, not necessarily of its holder.
	Handoff bool `json:"handoff,omitempty"`
}

// local is this process, computed on first use, not at start-up.
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
	return Encode(NodeData{ID: id, Tag: tag, Sealed: sealed, Label: label})
}

// Encode is d as node data, with this process's Host and PID.
func Encode(d NodeData) []byte {
	d.Host, d.PID = local().Host, local().PID
	b, _ := json.Marshal(d) // cannot fail: strings, bools and an int
	return b
}

type labelKey struct{}

// WithLabel returns a copy of ctx carrying label (lock.WithLabel).
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// Label returns the label ctx carries ("" for none), or an error matching
// conn.ErrInvalidArgument when a node may not carry it.
func Label(ctx context.Context) (string, error) {
	s, _ := ctx.Value(labelKey{}).(string)
	switch {
	case len(s) > 256:
		return "", fmt.Errorf("label is %d bytes, at most 256: %w", len(s), zkpath.ErrInvalid)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("label is not valid UTF-8: %w", zkpath.ErrInvalid)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "", fmt.Errorf("label %q holds control characters: %w", s, zkpath.ErrInvalid)
	}
	return s, nil
}

// RevokeMark is what lock.Revoke writes into a holder's node to ask it to
// release: Curator's LockInternals.REVOKE_MESSAGE.
const RevokeMark = "__REVOKE__"

// IsRevokeMark reports whether b is the revoke mark.
func IsRevokeMark(b []byte) bool { return string(b) == RevokeMark }

// DecodeData reads node data written by the engine; Curator's (the
// client's IP address as text) becomes Host. ok is false for data that
// says nothing useful, such as the revoke mark.
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

// Revocable reports whether name is a lock contender's or a semaphore
// lease's, to which a revoke request may go (not an election's).
func Revocable(name string) bool {
	return parses(name, ProtectedSchema{Name: "lock"}, ProtectedSchema{Name: "lease"}, HostKindSchema{})
}

// Recipe reports whether name is any recipe's node's, into which a write
// can hand the lock on.
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
