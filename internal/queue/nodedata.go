package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/locknode"
	"github.com/zkrecipes/zkrecipes/internal/nodelabel"
)

// NodeData is the JSON the engine writes into each node it creates.
type NodeData = locknode.NodeData

// local is this process, computed once.
var local = func() NodeData {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return NodeData{Host: host, PID: os.Getpid()}
}()

// Hostname is the host name the engine writes into node data.
func Hostname() string { return local.Host }

// NewID returns a new unique acquire id (a random UUID).
func NewID() string { return newID() }

// EncodeData is the data the engine writes into a node (see NodeData).
func EncodeData(id, tag string, sealed bool, label string) []byte {
	return encodeData(id, tag, sealed, label)
}

// Label returns the label ctx carries (lock.WithLabel), or an error
// matching conn.ErrInvalidArgument when it is not one a node may carry.
func Label(ctx context.Context) (string, error) {
	s := nodelabel.From(ctx)
	switch {
	case len(s) > nodelabel.Max:
		return "", fmt.Errorf("label is %d bytes, at most %d: %w", len(s), nodelabel.Max, conn.ErrInvalidArgument)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("label is not valid UTF-8: %w", conn.ErrInvalidArgument)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "", fmt.Errorf("label %q holds control characters: %w", s, conn.ErrInvalidArgument)
	}
	return s, nil
}

// DecodeData reads node data; ok is false for data that says nothing
// useful, the revoke mark included.
func DecodeData(b []byte) (d NodeData, ok bool) { return locknode.DecodeData(b) }

// IsRevokeMark reports whether b is the data lock.Revoke (and Curator's
// Revoker) writes into a holder's node to ask it to release.
func IsRevokeMark(b []byte) bool { return locknode.IsRevokeMark(b) }

func encodeData(id, tag string, sealed bool, label string) []byte {
	d := local
	d.ID, d.Tag, d.Sealed, d.Label = id, tag, sealed, label
	b, _ := json.Marshal(d) // cannot fail: strings and an int
	return b
}

func decodeData(b []byte) (d NodeData, ok bool) { return locknode.DecodeData(b) }
