package queue

import "github.com/zkrecipes/zkrecipes/internal/locknode"

// The naming of the queue's nodes is package locknode's, where package lock
// can read it too (lock.Revoke); the engine and the recipes name it here.
type (
	Contender       = locknode.Contender
	Schema          = locknode.Schema
	ProtectedSchema = locknode.ProtectedSchema
	HostKindSchema  = locknode.HostKindSchema
)

// SplitSeq is locknode.SplitSeq.
func SplitSeq(name string) (head string, seq int32, ok bool) { return locknode.SplitSeq(name) }
