// Package lockid lets multilock learn which session a lock of this module
// was made with, so that it can identify the lock by its full path and its
// ensemble, without a public accessor on every lock.
//
// Each lock type embeds a Link, through an unexported alias, made from the
// session given to its New. Link's method is unexported, so the embedded
// field adds nothing to the lock's API; Session finds it on any Locker
// that has one.
package lockid

import "github.com/zkrecipes/zkrecipes/conn"

// Link holds the session a lock's nodes are created in.
type Link struct{ sess *conn.Session }

// NewLink returns a Link to sess.
func NewLink(sess *conn.Session) Link { return Link{sess: sess} }

func (l Link) linkedSession() *conn.Session { return l.sess }

// Session returns the session lock was made with, or nil when lock is not
// a lock of this module (a stand-in, which its Path alone identifies).
func Session(lock any) *conn.Session {
	if x, ok := lock.(interface{ linkedSession() *conn.Session }); ok {
		return x.linkedSession()
	}
	return nil
}
