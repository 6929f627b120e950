// Package connhook lets the module's recipes reach what package conn keeps
// out of its public API. Package conn fills the variables in its init;
// they take and return conn's types as any, because conn imports this
// package and this package cannot import conn.
//
// It is internal so that users do not depend on it.
package connhook

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// SealedACL returns the ACL a recipe gives the lock nodes it seals, for a
// *conn.Session: the session's ACL (conn.WithACL) with WRITE and ADMIN
// removed from every entry, plus the session's own digest identity with
// ALL. Only that session can then change the node's data or its ACL.
var SealedACL func(sess any) []zk.ACL

// Unwatch tells a *conn.Epoch that its caller stopped waiting on ch, a
// channel the epoch's GetW, ExistsW or ChildrenW returned. If no other
// watcher of the session waits on that path and kind and the watch has
// not fired, conn removes it from the server (removeWatches) before any
// later request of the epoch, and waits for the answer bounded by ctx and
// the epoch; with ctx ended it returns at once and the removal still
// goes out. A fired or already stopped channel costs nothing.
var Unwatch func(ctx context.Context, ep any, ch <-chan zk.Event) error

// NewLease makes a *conn.Lease for node path, which the session of ep (a
// *conn.Epoch) created and holds. Recipes call it when they acquire.
var NewLease func(ep any, path string) any

// Released marks l (a *conn.Lease) as no longer held: its Lost channel is
// closed and Err says released. Recipes call it when they delete the node
// (or hand its deletion to the background); it deletes nothing.
var Released func(l any)

// SessionPassword returns the password of ep's ZooKeeper session (ep is a
// *conn.Epoch), as the Java client's getSessionPasswd gives it, for
// zktest.ExpireEpoch. A secret: it lets anyone attach to the session.
var SessionPassword func(ep any) []byte
