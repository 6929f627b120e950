// Package connhook lets the module's recipes reach what package conn keeps
// out of its public API. Package conn fills the variables in its init;
// they take and return conn's types as any, because conn imports this
// package and this package cannot import conn.
//
// It is internal so that users do not depend on it.
package connhook

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// SealedACL returns the ACL a recipe gives the lock nodes it seals, for a
// *conn.Session: the session's ACL (conn.WithACL) with WRITE and ADMIN
// removed from every entry, plus the session's own digest identity with
// ALL. Only that session can then change the node's data or its ACL.
var SealedACL func(sess any) []zk.ACL

// Shared returns the map in which the recipes keep per-session state of a
// *conn.Session (the in-process handoff's cohorts, package cohort), keyed
// by what they choose. It lives as long as the session.
var Shared func(sess any) *sync.Map

// LocalLease returns a local grant on the node of a *conn.Lease, as a
// *conn.Lease of its own: same node, epoch and token, pass as its Fence's
// Pass, and its own Lost channel, closed when it is released (Released)
// or when the node's lease is lost. Its guarded writes are refused once it
// is released, whether or not the node still exists.
var LocalLease func(l any, pass int64) any

// CreateWritten returns, for a *conn.Epoch, a channel closed once the next
// create request written on the epoch's connection (after the call) has
// gone to the server; never closed if none is. A request sent after that
// is answered after the create (ZooKeeper answers a session's requests in
// order): the engine sends its listing right behind its create.
var CreateWritten func(ep any) <-chan struct{}

// Closing returns a channel closed when Close is called on a
// *conn.Session: local waiters (package cohort) give up then, as requests
// on the session fail with conn.ErrClosed.
var Closing func(sess any) <-chan struct{}
